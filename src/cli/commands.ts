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
import { listOutbox } from '../sending/outbox.ts'
import type { Services } from '../services.ts'
import { integer, optionalInteger, parseCommand, required, UsageError } from './args.ts'

export type Command = (services: Services, argv: string[], stdin: () => Promise<string>) => Promise<unknown>

const id = (argv: string[], what = 'id') => integer(argv[0], what)

const quotaFlags = { quota: { type: 'string' }, per: { type: 'string' } } as const

function quotaOf(values: { quota?: string; per?: string }): QuotaInput | undefined {
  if (values.quota === undefined && values.per === undefined) return undefined
  if (values.quota === undefined || values.per === undefined)
    throw new UsageError('--quota and --per go together')
  return { quota: integer(values.quota, '--quota'), per: values.per }
}

async function password(
  values: { password?: string; 'password-stdin'?: boolean },
  stdin: () => Promise<string>,
) {
  if (values.password !== undefined && values['password-stdin']) {
    throw new UsageError('give --password or --password-stdin, not both')
  }
  if (values['password-stdin']) return (await stdin()).replace(/\r?\n$/, '')
  return values.password
}

/** Every operator command but `start`, keyed by "<group> <verb>". */
export const COMMANDS: Record<string, Command> = {
  'account create': async (s, argv, stdin) => {
    const { values } = parseCommand(argv, {
      email: { type: 'string' },
      plan: { type: 'string' },
      'password-stdin': { type: 'boolean' },
    })
    const account = { email: required(values, 'email'), plan: values.plan }
    const secret = await password(values, stdin)
    return secret === undefined
      ? createAccount(s.sql, account)
      : createAccountWithPassword(s.sql, { ...account, password: secret })
  },
  'account set-password': async (s, argv, stdin) => {
    const { values, positionals } = parseCommand(argv, { 'password-stdin': { type: 'boolean' } })
    if (!values['password-stdin'])
      throw new UsageError('usage: mailroom account set-password <account-id> --password-stdin')
    return setPassword(s.sql, id(positionals, 'account id'), (await password(values, stdin)) ?? '')
  },
  'account set-plan': (s, argv) => {
    const { positionals } = parseCommand(argv, {})
    const plan = positionals[1]
    if (!plan) throw new UsageError('usage: mailroom account set-plan <account-id> <free|pro>')
    return setPlan(s.sql, id(positionals, 'account id'), plan)
  },
  'account list': (s, argv) => {
    parseCommand(argv, {})
    return listAccounts(s.sql)
  },

  'connection add': async (s, argv, stdin) => {
    const { values } = parseCommand(argv, {
      account: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      username: { type: 'string' },
      password: { type: 'string' },
      'password-stdin': { type: 'boolean' },
      from: { type: 'string' },
      rate: { type: 'string' },
      ...quotaFlags,
    })
    const secret = await password(values, stdin)
    if (secret === undefined) throw new UsageError('--password or --password-stdin is required')
    return addConnection(s, {
      accountId: integer(required(values, 'account'), '--account'),
      host: required(values, 'host'),
      port: integer(required(values, 'port'), '--port'),
      username: required(values, 'username'),
      password: secret,
      from: values.from,
      quota: quotaOf(values),
      rate: optionalInteger(values.rate, '--rate'),
    })
  },
  'connection list': (s, argv) => {
    const { values } = parseCommand(argv, { account: { type: 'string' } })
    return listConnections(s.sql, integer(required(values, 'account'), '--account'))
  },
  'connection update': async (s, argv, stdin) => {
    const { values, positionals } = parseCommand(argv, {
      ...quotaFlags,
      'no-quota': { type: 'boolean' },
      rate: { type: 'string' },
      'password-stdin': { type: 'boolean' },
    })
    if (values['no-quota'] && values.quota !== undefined)
      throw new UsageError('give --quota or --no-quota, not both')
    return updateConnection(s, id(positionals, 'connection id'), {
      quota: values['no-quota'] ? null : quotaOf(values),
      rate: optionalInteger(values.rate, '--rate'),
      password: await password(values, stdin),
    })
  },
  'connection disable': (s, argv) => disableConnection(s.sql, id(parseCommand(argv, {}).positionals), true),
  'connection enable': (s, argv) => disableConnection(s.sql, id(parseCommand(argv, {}).positionals), false),
  'connection pause': (s, argv) => {
    const { values, positionals } = parseCommand(argv, { minutes: { type: 'string' } })
    return pauseConnection(s.sql, id(positionals), optionalInteger(values.minutes, '--minutes'))
  },
  'connection resume': (s, argv) => resumeConnection(s.sql, id(parseCommand(argv, {}).positionals)),
  'connection delete': (s, argv) => deleteConnection(s.sql, id(parseCommand(argv, {}).positionals)),

  'key create': (s, argv) => {
    const { values } = parseCommand(argv, {
      account: { type: 'string' },
      name: { type: 'string' },
      connection: { type: 'string' },
      'expires-in-days': { type: 'string' },
    })
    return createKey(s.sql, {
      accountId: integer(required(values, 'account'), '--account'),
      name: required(values, 'name'),
      connectionId: optionalInteger(values.connection, '--connection'),
      expiresInDays: optionalInteger(values['expires-in-days'], '--expires-in-days'),
    })
  },
  'key list': (s, argv) => {
    const { values } = parseCommand(argv, { account: { type: 'string' } })
    return listKeys(s.sql, integer(required(values, 'account'), '--account'))
  },
  'key rotate': (s, argv) => rotateKey(s.sql, id(parseCommand(argv, {}).positionals, 'key id')),
  'key revoke': (s, argv) => revokeKey(s.sql, id(parseCommand(argv, {}).positionals, 'key id')),
  'key scope': (s, argv) => {
    const { values, positionals } = parseCommand(argv, {
      connection: { type: 'string' },
      all: { type: 'boolean' },
    })
    if ((values.connection === undefined) === !values.all)
      throw new UsageError('give --connection <id> or --all')
    return scopeKey(
      s.sql,
      id(positionals, 'key id'),
      values.all ? null : integer(values.connection, '--connection'),
    )
  },

  'outbox list': (s, argv) => {
    const { values } = parseCommand(argv, { account: { type: 'string' }, limit: { type: 'string' } })
    const limit = optionalInteger(values.limit, '--limit') ?? 50
    if (limit < 1) throw new UsageError('--limit must be at least 1')
    return listOutbox(s.sql, integer(required(values, 'account'), '--account'), limit)
  },

  'batch failures': (s, argv) => batchFailures(s.sql, id(parseCommand(argv, {}).positionals, 'batch id')),
  'batch retry': (s, argv) => retryBatch(s.sql, id(parseCommand(argv, {}).positionals, 'batch id')),
}
