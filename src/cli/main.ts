import { text } from 'node:stream/consumers'
import { loadConfig } from '../config.ts'
import { createLogger } from '../log.ts'
import { registerCommands } from './commands.ts'
import { type CliIo, runCli } from './program.ts'

// The services and the server are loaded when a command needs them, not at every start: the
// build keeps them in chunks of their own (scripts/build.ts), so `--help` and the operator
// commands do not load the web app, the worker and their packages.

/** Settings are read and checked before anything is opened; operator commands log only warnings unless asked. */
async function open(command: 'start' | 'operator') {
  const config = loadConfig()
  const level = command === 'start' || process.env.LOG_LEVEL ? config.logLevel : 'warn'
  const { openServices } = await import('../open-services.ts')
  const services = await openServices(config, createLogger(level, config.logFormat))
  return { services, close: () => services.close() }
}

const io: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stdin: () => text(process.stdin),
  open: () => open('operator'),
  async start(options) {
    // Before anything is opened, so that a signal during start-up still ends in an orderly stop.
    const { start, stopSignal } = await import('./start.ts')
    const stop = stopSignal()
    const { services, close } = await open('start')
    try {
      await start(services, options, stop)
    } finally {
      await close()
    }
  },
}

const code = await runCli(process.argv.slice(2), io, registerCommands)
// Exits explicitly (once stderr is written): pooled sockets and timers would otherwise keep it alive.
process.stderr.write('', () => process.exit(code))
