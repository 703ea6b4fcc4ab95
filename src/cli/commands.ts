import { Argument, type Command, InvalidArgumentError, Option } from 'commander'
import { createAccount, listAccounts, setPlan } from '../accounts/accounts.ts'
import { createAccountWithPassword, setPassword } from '../accounts/passwords.ts'
import { batchFailures, retryBatch } from '../batches/batches.ts'
import {
  addConnection,
  deleteConnection,
  disableConnection,
  listConnections,
  pauseConnection,
  type QuotaInput,
  resumeConnection,
  updateConnection,
} from '../connections/connections.ts'
import { createKey, listKeys, revokeKey, rotateKey, scopeKey } from '../keys/keys.ts'
import { listOutbox } from '../sending/outbox-views.ts'
import type { Services } from '../services.ts'
import { formCommands, signupPageCommands } from './hosted-commands.ts'
import { mailboxCommands } from './mailbox-commands.ts'
import { type Act, type CliIo, group, ofAccount, passwordOf, UsageError, wholeNumber } from './program.ts'
import { suppressionCommands } from './suppression-commands.ts'

/**
 * Every operator command (docs/operator-cli.md). Each is one entry: its words, arguments and
 * options for commander, and the domain call it makes; `act` opens the services, runs it, and
 * prints the result. `start` is the process's own (io.start serves until a signal).
 */
export function registerCommands(program: Command, act: Act, io: CliIo): void {
  processCommands(program, act, io)
  accountCommands(program, act)
  const connection = connectionCommands(program, act)
  connectionStateCommands(connection, act)
  mailboxCommands(connection, act)
  keyCommands(program, act)
  mailCommands(program, act)
  formCommands(program, act)
  signupPageCommands(program, act)
  suppressionCommands(program, act)
}

function processCommands(program: Command, act: Act, io: CliIo): void {
  program
    .command('start')
    .description('run the API server, the SMTP relay and the background worker (npm start)')
    .option('--no-worker', 'only the API server')
    .addOption(new Option('--worker-only', 'only the background worker').conflicts('worker'))
    .action(async (opts: { worker: boolean; workerOnly?: boolean }) => {
      if (!io.start) throw new Error('mailroom start runs only as a process of its own')
      await io.start({ api: !opts.workerOnly, worker: opts.worker })
    })
  program
    .command('migrate')
    .description("apply the database migrations (and the background worker's schema), then exit")
    .action(act(async (services) => ({ migrated: true, applied: services.appliedMigrations })))
}

function accountCommands(program: Command, act: Act): void {
  const account = group(program, 'account', 'accounts and their plans')
  account
    .command('create')
    .description('create an account (Free unless --plan pro)')
    .requiredOption('--email <addr>', "the owner's address")
    .addOption(new Option('--plan <plan>', 'the plan').choices(['free', 'pro']).default('free'))
    .option(
      '--password-stdin',
      "read a dashboard password from standard input (else the owner can't sign in yet)",
    )
    .action(
      act(async (s, call) => {
        const account = { email: call.opts.email, plan: call.opts.plan }
        const password = await passwordOf(call)
        return password === undefined
          ? createAccount(s.sql, account)
          : createAccountWithPassword(s.sql, { ...account, password })
      }),
    )
  account
    .command('set-password')
    .description("set the account's dashboard password (12 to 1024 characters), read from standard input")
    .argument('<account-id>', 'the account', wholeNumber)
    .requiredOption('--password-stdin', 'read the password from standard input')
    .action(
      act(async (s, call) => setPassword(s.sql, call.args[0] as number, (await passwordOf(call)) ?? '')),
    )
  account
    .command('set-plan')
    .description('move an account to the Free or the Pro plan')
    .argument('<account-id>', 'the account', wholeNumber)
    .addArgument(new Argument('<plan>', 'the plan').choices(['free', 'pro']))
    .action(act((s, { args }) => setPlan(s.sql, args[0] as number, args[1] as string)))
  account
    .command('list')
    .description('every account')
    .action(act((s) => listAccounts(s.sql)))
}

/** Adding, listing and changing connections; returns their group for the commands of their state. */
function connectionCommands(program: Command, act: Act): Command {
  const connection = group(program, 'connection', 'the SMTP logins accounts send through')
  connection
    .command('add')
    .description('test an SMTP login, then save it (nothing is saved when the login fails)')
    .requiredOption('--account <id>', 'the account', wholeNumber)
    .requiredOption('--host <host>', 'the SMTP server')
    .requiredOption('--port <port>', '465 (TLS), 587 or 2525 (STARTTLS)', wholeNumber)
    .requiredOption('--username <user>', 'the SMTP login')
    .option('--password <pw>', 'the password (other users can see it: prefer --password-stdin)')
    .option('--password-stdin', 'read the password from standard input')
    .option('--from <addr>', 'the sending address (default: the username, when it is an address)')
    .option('--quota <n>', 'at most this many emails per --per (default: no quota)', wholeNumber)
    .addOption(per())
    .option('--rate <per-minute>', 'emails a minute, 1 to 60000 (default 60)', wholeNumber)
    .action(
      act(async (s, call) => {
        const password = await passwordOf(call)
        if (password === undefined) throw new UsageError('--password or --password-stdin is required')
        const { opts } = call
        return addConnection(s, {
          accountId: opts.account,
          host: opts.host,
          port: opts.port,
          username: opts.username,
          password,
          from: opts.from,
          quota: quotaOf(opts) ?? undefined,
          rate: opts.rate,
        })
      }),
    )
  connection
    .command('list')
    .description("an account's connections (never their passwords)")
    .requiredOption('--account <id>', 'the account', wholeNumber)
    .action(act(ofAccount((s, { opts }) => listConnections(s.sql, opts.account))))
  connection
    .command('update')
    .description('change the quota, rate or password (tested first); waiting mail is sent on')
    .argument('<id>', 'the connection', wholeNumber)
    .option('--quota <n>', 'at most this many emails per --per', wholeNumber)
    .addOption(per())
    .addOption(new Option('--no-quota', 'remove the quota'))
    .option('--rate <per-minute>', 'emails a minute, 1 to 60000', wholeNumber)
    .option('--password-stdin', 'read a new password from standard input')
    .action(
      act(async (s, call) =>
        updateConnection(s, call.args[0] as number, {
          quota: quotaOf(call.opts),
          rate: call.opts.rate,
          password: await passwordOf(call),
        }),
      ),
    )
  return connection
}

function connectionStateCommands(connection: Command, act: Act): void {
  byId(
    act,
    connection,
    'disable',
    'send nothing through it; its queued mail waits',
    ['id', 'the connection'],
    (s, id) => disableConnection(s.sql, id, true),
  )
  byId(
    act,
    connection,
    'enable',
    'send through it again, starting with the mail that waited',
    ['id', 'the connection'],
    (s, id) => disableConnection(s.sql, id, false),
  )
  connection
    .command('pause')
    .description('pause it for --minutes, or until resumed')
    .argument('<id>', 'the connection', wholeNumber)
    .option('--minutes <n>', 'how long (default: until resumed)', wholeNumber)
    .action(act((s, { args, opts }) => pauseConnection(s.sql, args[0] as number, opts.minutes)))
  byId(
    act,
    connection,
    'resume',
    'end a pause (by hand or after provider failures) and any back-off',
    ['id', 'the connection'],
    (s, id) => resumeConnection(s.sql, id),
  )
  byId(
    act,
    connection,
    'delete',
    'delete it; its queued mail fails ("connection deleted")',
    ['id', 'the connection'],
    (s, id) => deleteConnection(s.sql, id),
  )
}

function keyCommands(program: Command, act: Act): void {
  const key = group(program, 'key', 'API keys')
  key
    .command('create')
    .description('create a key; its secret is printed once')
    .requiredOption('--account <id>', 'the account', wholeNumber)
    .requiredOption('--name <name>', 'a name to tell it apart')
    .option('--connection <id>', 'scope it to one connection', wholeNumber)
    .option('--expires-in-days <days>', '7 to 365 (default: never)', wholeNumber)
    .action(
      act((s, { opts }) =>
        createKey(s.sql, {
          accountId: opts.account,
          name: opts.name,
          connectionId: opts.connection,
          expiresInDays: opts.expiresInDays,
        }),
      ),
    )
  key
    .command('list')
    .description("an account's keys (never their secrets)")
    .requiredOption('--account <id>', 'the account', wholeNumber)
    .action(act(ofAccount((s, { opts }) => listKeys(s.sql, opts.account))))
  byId(
    act,
    key,
    'rotate',
    'a new secret for the key; the old one stops working',
    ['key-id', 'the key'],
    (s, id) => rotateKey(s.sql, id),
  )
  byId(act, key, 'revoke', 'disable the key for good', ['key-id', 'the key'], (s, id) => revokeKey(s.sql, id))
  key
    .command('scope')
    .description('limit the key to one connection, or let it use all')
    .argument('<key-id>', 'the key', wholeNumber)
    .addOption(
      new Option('--connection <id>', 'only this connection').argParser(wholeNumber).conflicts('all'),
    )
    .option('--all', 'every connection of the account')
    .action(
      act((s, { args, opts }) => {
        if (opts.connection === undefined && !opts.all)
          throw new UsageError('give --connection <id> or --all')
        return scopeKey(s.sql, args[0] as number, opts.all ? null : opts.connection)
      }),
    )
}

/** What was sent: the outbox, and batches' failed recipients. */
function mailCommands(program: Command, act: Act): void {
  group(program, 'outbox', 'what was sent, is waiting, or failed')
    .command('list')
    .description("an account's outbox records, newest first (status, attempts, last error)")
    .requiredOption('--account <id>', 'the account', wholeNumber)
    .option('--limit <n>', 'at most this many, from 1', atLeastOne, 50)
    .action(
      act(
        ofAccount(
          async (s, { opts }) => (await listOutbox(s.sql, opts.account, {}, { size: opts.limit })).records,
        ),
      ),
    )

  const batch = group(program, 'batch', "batches' failed recipients")
  byId(act, batch, 'failures', "a batch's failed recipients and why", ['batch-id', 'the batch'], (s, id) =>
    batchFailures(s.sql, id),
  )
  byId(act, batch, 'retry', "queue a batch's failed recipients again", ['batch-id', 'the batch'], (s, id) =>
    retryBatch(s.sql, id, 'operator'),
  )
}

function per(): Option {
  return new Option('--per <period>', 'the quota window, in UTC').choices(['day', 'hour'])
}

function atLeastOne(raw: string): number {
  const value = wholeNumber(raw)
  if (value < 1) throw new InvalidArgumentError('must be at least 1')
  return value
}

/**
 * The quota options: `--quota` and `--per` together (that quota), `--no-quota` (quota false)
 * alone (null: none), or neither (undefined: unchanged).
 */
function quotaOf(opts: { quota?: number | false; per?: string }): QuotaInput | null | undefined {
  if (opts.quota === false) {
    if (opts.per !== undefined) throw new UsageError('--no-quota takes no --per')
    return null
  }
  if (opts.quota === undefined && opts.per === undefined) return undefined
  if (opts.quota === undefined || opts.per === undefined)
    throw new UsageError('--quota and --per go together')
  return { quota: opts.quota, per: opts.per }
}

/** A command whose one argument is an ID, handed to `run` with the services. */
function byId(
  act: Act,
  group: Command,
  name: string,
  description: string,
  [argument, what]: [string, string],
  run: (services: Services, id: number) => Promise<unknown>,
): void {
  group
    .command(name)
    .description(description)
    .argument(`<${argument}>`, what, wholeNumber)
    .action(act((s, { args }) => run(s, args[0] as number)))
}
