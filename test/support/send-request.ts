/**
 * POST /send as a Pro account with one connection to a sink, or as an account without any
 * connection, and what reached the sink and the outbox.
 */
import { beforeAll, expect } from 'vitest'
import { type SeededAccount, seedAccount, type TestApp } from './app.ts'
import type { ReceivedMessage, SmtpSink } from './smtp-sink.ts'

export const SENDER = 'sender@mailroom-request.example'

export function addressesIn(header: string | undefined): string[] {
  return (header ?? '').match(/[^\s<>,"]+@[^\s<>,"]+/g) ?? []
}

let subjectSeq = 0
export function uniqueSubject(label: string) {
  return `${label} #${++subjectSeq}`
}

interface Accounts {
  sink: SmtpSink
  sender: SeededAccount
  /** An account without any connection. */
  bare: SeededAccount
}

/** The /send requests of a test file's app, and the accounts they are made as. */
export function useSendRequest(app: TestApp) {
  const accounts = {} as Accounts

  beforeAll(async () => {
    accounts.sink = await app.sink({ port: 465 })
    accounts.sender = await seedAccount(app, {
      plan: 'pro',
      connection: { ...accounts.sink.login, from: SENDER, rate: 6000 },
    })
    accounts.bare = await seedAccount(app, { plan: 'pro' })
  })

  function send(body: unknown, key = accounts.sender.key) {
    return app.request('/send', { method: 'POST', key, body })
  }

  /** A send expected to succeed; returns the body and what the sink received for it. */
  async function deliver(body: Record<string, unknown>) {
    const { sink } = accounts
    const before = sink.messages.length
    const res = await send(body)
    const json = await res.json()
    expect(res.status, JSON.stringify(json)).toBe(200)
    expect(sink.messages.length).toBe(before + 1)
    const received = sink.messages[before] as ReceivedMessage
    return { json, received }
  }

  /** A send expected to be refused; asserts nothing reached the sink. */
  async function refused(body: unknown, key = accounts.sender.key) {
    const { sink } = accounts
    const before = sink.messages.length
    const res = await send(body, key)
    const json = await res.json()
    expect(sink.messages.length).toBe(before)
    return { status: res.status, json }
  }

  async function outboxRow(id: number) {
    const [row] = await app.services.sql<
      {
        status: string
        account_id: number
        connection_id: number | null
        to_addresses: string[]
        cc_addresses: string[]
        bcc_addresses: string[]
        subject: string
        message_id: string
        sent_at: Date | null
        error: string | null
      }[]
    >`select status, account_id, connection_id, to_addresses, cc_addresses, bcc_addresses, subject,
             message_id, sent_at, error
      from outbox where id = ${id}`
    return row
  }

  return { accounts, deliver, refused, outboxRow }
}
