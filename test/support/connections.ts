/**
 * The connection tests' fixture: the test app, an SMTP sink on each port a connection may use,
 * and owners and from addresses made fresh for each test.
 */
import { beforeAll } from 'vitest'
import { type Account, createAccount } from '../../src/accounts/accounts.ts'
import {
  type AddConnectionInput,
  addConnection,
  type ConnectionView,
} from '../../src/connections/connections.ts'
import { type TestApp, useTestApp } from './app.ts'
import type { SmtpSink } from './smtp-sink.ts'

export interface ConnectionSinks {
  /** Implicit TLS; its username is an address. */
  tls465: SmtpSink
  /** STARTTLS; its username is an address. */
  starttls587: SmtpSink
  /** STARTTLS; its username is not an address. */
  starttls2525: SmtpSink
  /** Port 587 without STARTTLS, which would take AUTH in clear text. */
  plain587: SmtpSink
}

export interface ConnectionFixture {
  app: TestApp
  /** Started before the file's tests. */
  sinks: ConnectionSinks
  account(plan?: 'free' | 'pro'): Promise<Account>
  /** A from address no other connection has. */
  fresh(): string
  /** A connection on the 2525 sink with a from address of its own. */
  add(accountId: number, extra?: Partial<AddConnectionInput>): Promise<ConnectionView>
  rowCount(accountId: number): Promise<number>
  sealedPassword(id: number): Promise<string>
}

export function useConnections(): ConnectionFixture {
  const app = useTestApp()
  const sinks = {} as ConnectionSinks
  beforeAll(async () => {
    ;[sinks.tls465, sinks.starttls587, sinks.starttls2525, sinks.plain587] = await Promise.all([
      app.sink({ port: 465, username: 'mailer@example.com' }),
      app.sink({ port: 587, username: 'sender@example.com' }),
      app.sink({ port: 2525 }),
      app.sink({ port: 587, offerStartTls: false }),
    ])
  })

  let seq = 0
  const fresh = () => `from${++seq}@example.com`
  return {
    app,
    sinks,
    fresh,
    account: (plan = 'pro') =>
      createAccount(app.services.sql, { email: `conn-owner${++seq}@example.com`, plan }),
    add: (accountId, extra = {}) =>
      addConnection(app.services, { accountId, ...sinks.starttls2525.login, from: fresh(), ...extra }),
    async rowCount(accountId) {
      const [row] = await app.db.sql<{ n: number }[]>`
        select count(*)::int as n from connections where account_id = ${accountId}`
      return row?.n ?? -1
    },
    async sealedPassword(id) {
      const [row] = await app.db.sql<{ password_encrypted: string }[]>`
        select password_encrypted from connections where id = ${id}`
      if (!row) throw new Error(`no connection ${id}`)
      return row.password_encrypted
    },
  }
}
