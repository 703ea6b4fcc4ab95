import { readFileSync } from 'node:fs'
import path from 'node:path'
import { Command, CommanderError, InvalidArgumentError, type OptionValues } from 'commander'
import { requireAccount } from '../accounts/accounts.ts'
import { AppError } from '../app-error.ts'
import { MAX_INTEGER } from '../db/ids.ts'
import { PROJECT_ROOT } from '../project-root.ts'
import type { Services } from '../services.ts'

/** What the operator command reads and writes, given by `main` (a real process) or by tests. */
export interface CliIo {
  stdout(text: string): void
  stderr(text: string): void
  stdin(): Promise<string>
  /** Opens the services a command runs on (settings are read and checked first); `close` ends them. */
  open(): Promise<{ services: Services; close(): Promise<void> }>
  /** `mailroom start`: serves until stopped. Only a real process has it. */
  start?(options: { api: boolean; worker: boolean }): Promise<void>
}

/** One command's input: its arguments (already parsed), its options, and standard input. */
export interface Call {
  args: unknown[]
  opts: OptionValues
  stdin(): Promise<string>
}

/** Runs a command on the services and returns the JSON document it prints. */
export type Run = (services: Services, call: Call) => Promise<unknown>

/** A command line that cannot be run as given (exit 2, with the command's usage). */
export class UsageError extends Error {
  override name = 'UsageError'
}

/** Adds the commands to the program (src/cli/commands.ts). */
export type Register = (program: Command, act: Act, io: CliIo) => void

/** A command's action: opens the services, runs, prints the JSON document, closes. */
export type Act = (run: Run) => (...actionArgs: unknown[]) => Promise<void>

const { version } = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
  version: string
}

/** Parses a whole number (ids, counts); anything else is a usage error naming the value. */
export function wholeNumber(raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) > MAX_INTEGER) {
    throw new InvalidArgumentError(`must be a whole number up to ${MAX_INTEGER}`)
  }
  return Number(raw)
}

/**
 * The `mailroom` command, as commander parses it. Every command prints exactly one JSON
 * document on stdout and exits 0, or prints one line on stderr and exits non-zero: 1 when the
 * work was refused (the catalog's message), 2 when the command line was wrong (with its usage).
 * `--help`/`-h` at every level and `--version` print on stdout and exit 0.
 */
export function buildProgram(io: CliIo, register: Register): Command {
  const program = new Command('mailroom')
    .description(
      'Operate Mailroom: accounts, SMTP connections, API keys, the outbox and batches.\n' +
        'Each command prints one JSON document on stdout; failures print one line on stderr.\n' +
        'Settings come from the environment (DATABASE_URL or MAILROOM_DATA_DIR, ...): see the README.',
    )
    .version(version, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'print this help')
    .helpCommand('help [command]', 'print the help of a command')
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (text) => io.stdout(text),
      writeErr: (text) => io.stderr(text),
      // Usage errors are printed by runCli, on one line with the usage.
      outputError: () => {},
    })
  const act: Act = (run) =>
    async function (this: Command) {
      const [opts, command] = [this.opts(), this]
      const args = command.processedArgs
      const { services, close } = await io.open()
      try {
        const result = await run(services, { args, opts, stdin: io.stdin })
        io.stdout(`${JSON.stringify(result, null, 2)}\n`)
      } finally {
        await close()
      }
    }
  register(program, act, io)
  for (const command of walk(program)) {
    command.exitOverride()
    if (command.commands.length === 0 && command !== program) command.usage(usageOf(command))
  }
  return program
}

function* walk(command: Command): Generator<Command> {
  yield command
  for (const sub of command.commands) yield* walk(sub)
}

function pathOf(command: Command): string {
  const names: string[] = []
  for (let at: Command | null = command; at; at = at.parent) names.unshift(at.name())
  return names.join(' ')
}

/** `--email <addr> [--plan <plan>] <account-id>`: required options spelled out, the rest bracketed. */
function usageOf(command: Command): string {
  const options = command.options.filter((o) => o.long !== '--help' && !o.hidden)
  const required = options.filter((o) => o.mandatory).map((o) => o.flags.replace(/^-\w, /, ''))
  const optional = options.filter((o) => !o.mandatory).map((o) => `[${o.flags.replace(/^-\w, /, '')}]`)
  const args = command.registeredArguments.map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}]`))
  return [...args, ...required, ...optional].join(' ')
}

/** The one line a failure prints, and its exit code. */
function failure(error: unknown, program: Command, argv: string[]): { line: string; code: number } {
  if (error instanceof CommanderError) {
    const command = commandOf(program, argv)
    const reason = error.message
      .replace(/^error: /, '')
      .replace(/\s*\n\s*/g, ' ')
      .replace(/\.$/, '')
    return { line: `${reason}; usage: ${pathOf(command)} ${command.usage()}`.trimEnd(), code: 2 }
  }
  if (error instanceof UsageError) {
    const command = commandOf(program, argv)
    return { line: `${error.message}; usage: ${pathOf(command)} ${command.usage()}`, code: 2 }
  }
  const message = error instanceof AppError || error instanceof Error ? error.message : String(error)
  return { line: message.replace(/\s*\n\s*/g, ' '), code: 1 }
}

/** The deepest command the arguments name (for the usage line of a failure). */
function commandOf(program: Command, argv: string[]): Command {
  let command = program
  for (const word of argv) {
    const next = command.commands.find((c) => c.name() === word || c.aliases().includes(word))
    if (!next) break
    command = next
  }
  return command
}

/** Runs the command line `argv` (without `node mailroom`) and returns the exit code. */
export async function runCli(argv: string[], io: CliIo, register: Register): Promise<number> {
  const program = buildProgram(io, register)
  try {
    await program.parseAsync(argv, { from: 'user' })
    return 0
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help, -h, help and --version: printed on stdout, and a success.
      if (error.exitCode === 0) return 0
      // A group named without its command: its help (on stderr) is the usage.
      if (error.code === 'commander.help') return 2
    }
    const { line, code } = failure(error, program, argv)
    io.stderr(`mailroom: ${line}\n`)
    return code
  }
}

/** A word that gathers commands (`mailroom account ...`). */
export function group(program: Command, name: string, description: string): Command {
  return program.command(name).description(description)
}

/** A command about the account `--account` names, refused (exit 1) when there is no such account. */
export function ofAccount(run: Run): Run {
  return async (services, call) => {
    await requireAccount(services.sql, call.opts.account)
    return run(services, call)
  }
}

/** The password of --password or --password-stdin (never both); undefined when neither is given. */
export async function passwordOf({ opts, stdin }: Call): Promise<string | undefined> {
  if (opts.password !== undefined && opts.passwordStdin) {
    throw new UsageError('give --password or --password-stdin, not both')
  }
  if (!opts.passwordStdin) return opts.password
  const password = (await stdin()).replace(/\r?\n$/, '')
  if (password === '') throw new UsageError('--password-stdin read an empty password')
  return password
}
