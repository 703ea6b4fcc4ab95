/**
 * A message's size goes with MAIL FROM (`SIZE=`, RFC 1870) to a server that offers SIZE, so a
 * message larger than the server takes is refused before its bytes are uploaded: at once when the
 * server announced its limit, at MAIL FROM when it keeps the limit to itself.
 */
import { describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from '../support/app.ts'
import { email, enqueued, waitForOutboxStatus } from '../support/queue.ts'
import { postSend, type Sender } from '../support/sending.ts'
import type { SmtpSinkOptions } from '../support/smtp-sink.ts'

const app = useTestApp()
const LIMIT = 50_000
/** About twice the limit. */
const LARGE_BODY = 'A line of text that makes the message large.\n'.repeat(2_200)

let seq = 0

async function sender(
  options: Omit<SmtpSinkOptions, 'port'>,
  plan: 'free' | 'pro' = 'free',
): Promise<Sender> {
  const sink = await app.sink({ port: 2525, ...options })
  const from = `size${++seq}@example.com`
  const seeded = await seedAccount(app, { plan, connection: { ...sink.login, from, rate: 6000 } })
  if (!seeded.connection) throw new Error('seedAccount made no connection')
  return { sink, key: seeded.key, accountId: seeded.account.id, connectionId: seeded.connection.id, from }
}

async function failureCount(s: Sender): Promise<number> {
  const [row] = await app.services.sql<{ n: number }[]>`
    select consecutive_failures as n from connections where id = ${s.connectionId}`
  return row?.n ?? 0
}

describe('the message size at MAIL FROM', () => {
  it('is declared to a server that offers SIZE: the bytes that then arrive', async () => {
    const s = await sender({})
    const reply = await postSend(app, s.key, { to: 'ada@example.com', subject: 'Sized', text_body: 'Hello' })
    expect(reply.status).toBe(200)
    const [received] = await s.sink.waitForMessages(1)
    expect(s.sink.declaredSizes).toEqual([Buffer.byteLength(received?.raw ?? '')])
  })

  it('larger than the limit the server announced: refused before a byte is sent, 500 saying so', async () => {
    const s = await sender({ size: LIMIT })
    const reply = await postSend(app, s.key, {
      to: 'ada@example.com',
      subject: 'Large',
      text_body: LARGE_BODY,
    })
    expect(reply.status).toBe(500)
    expect(reply.body).toMatchObject({ code: 'INTERNAL_ERROR' })
    expect(reply.body.message).toMatch(new RegExp(`size.*${LIMIT}`, 'i'))
    expect(s.sink.declaredSizes).toEqual([])
    expect(s.sink.dataBytes).toBe(0)
    // The message's fault, not the connection's.
    expect(await failureCount(s)).toBe(0)
  })

  it('larger than a limit the server keeps to itself: refused at MAIL FROM (552), before DATA', async () => {
    const s = await sender({ size: LIMIT, hideSize: true })
    const reply = await postSend(app, s.key, {
      to: 'ada@example.com',
      subject: 'Large',
      text_body: LARGE_BODY,
    })
    expect(reply.status).toBe(500)
    expect(reply.body.message).toMatch(/^552 5\.3\.4 /)
    expect(s.sink.declaredSizes).toEqual([expect.any(Number)])
    expect(s.sink.declaredSizes[0]).toBeGreaterThan(LIMIT)
    expect(s.sink.dataBytes).toBe(0)
  })

  it('a queued message larger than the announced limit ends failed on its first attempt, never uploaded', async () => {
    const s = await sender({ size: LIMIT }, 'pro')
    const id = await enqueued(app, s.key, email({ text_body: LARGE_BODY }))
    await app.worker()
    const record = await waitForOutboxStatus(app, s.accountId, id, 'failed')
    expect(record.attempts).toBe(1)
    expect(s.sink.dataBytes).toBe(0)
    expect(await failureCount(s)).toBe(0)
  })
})
