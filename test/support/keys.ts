/**
 * The API key tests' fixture: the test app, owners made fresh for each test, and connections
 * for keys scoped to one.
 */
import { beforeAll } from 'vitest'
import { type Account, createAccount } from '../../src/accounts/accounts.ts'
import { addConnection, type ConnectionView } from '../../src/connections/connections.ts'
import { type TestApp, useTestApp } from './app.ts'
import type { SmtpSink } from './smtp-sink.ts'

/** What `authenticate` gives for a key. */
export interface KeyAuth {
  accountId: number
  keyId: number
  plan: 'free' | 'pro'
  connectionId: number | null
}

export interface KeyFixture {
  app: TestApp
  account(plan?: 'free' | 'pro'): Promise<Account>
  /** A connection of the account's on the file's SMTP sink. */
  connection(accountId: number): Promise<ConnectionView>
  keyCount(accountId: number): Promise<number>
  /** Exactly what `authenticate` gives for key `keyId` of `owner` on `plan`, scoped or not. */
  authOf(owner: Account, keyId: number, plan: 'free' | 'pro', connectionId?: number | null): KeyAuth
}

export function useKeys(): KeyFixture {
  const app = useTestApp()
  let sink: SmtpSink
  beforeAll(async () => {
    sink = await app.sink({ port: 2525 })
  })

  let seq = 0
  return {
    app,
    account: (plan = 'free') =>
      createAccount(app.services.sql, { email: `keys-owner${++seq}@example.com`, plan }),
    connection: (accountId) =>
      addConnection(app.services, { accountId, ...sink.login, from: `sender${++seq}@example.com` }),
    async keyCount(accountId) {
      const [row] = await app.db.sql<{ n: number }[]>`
        select count(*)::int as n from api_keys where account_id = ${accountId}`
      return row?.n ?? -1
    },
    authOf: (owner, keyId, plan, connectionId = null) => ({ accountId: owner.id, keyId, plan, connectionId }),
  }
}
