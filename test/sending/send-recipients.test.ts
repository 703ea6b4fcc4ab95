/**
 * POST /send reads the SMTP server's answer recipient by recipient (issue: "What the SMTP server
 * said, per recipient"): a message taken for some recipients is sent to them and the others'
 * refusals are said; a refusal of every recipient answers by its kind; and only replies that
 * speak for the whole connection count toward pausing it.
 */
import { describe, expect, it } from 'vitest'
import type { RecipientOutcome } from '../../src/smtp/outcome.ts'
import { useTestApp } from '../support/app.ts'
import { humanText } from '../support/matchers.ts'
import {
  dailyUsed,
  expectRetryAfter,
  postSend,
  quotaUsed,
  type Sender,
  startSender,
} from '../support/sending.ts'
import type { SinkBehaviour } from '../support/smtp-sink.ts'

const app = useTestApp()

let seq = 0
function email(extra: Record<string, unknown> = {}) {
  return { to: 'ada@example.com', subject: `Recipients ${++seq}`, text_body: 'Hello', ...extra }
}

function sender(behaviour: Partial<SinkBehaviour>): Promise<Sender> {
  return startSender(app, 'rcpt', { behaviour, quota: { quota: 100, per: 'day' } })
}

const REJECTED = { code: 550, message: '5.7.1 Recipient address rejected' }
const BUSY = { code: 450, message: '4.2.1 Mailbox busy, try again later' }
const THROTTLED = { code: 450, message: '4.7.1 Too many messages for this recipient, slow down' }

interface Saved {
  status: string
  error: string | null
  recipients: RecipientOutcome[] | null
  attempts: number
}

async function record(outboxId: number): Promise<Saved> {
  const [row] = await app.services.sql<Saved[]>`
    select status, error, recipients, attempts from outbox where id = ${outboxId}`
  if (!row) throw new Error(`no outbox record ${outboxId}`)
  return row
}

async function history(outboxId: number) {
  return app.services.sql<{ attempt: number; outcome: string; recipients: RecipientOutcome[] }[]>`
    select attempt, outcome, recipients from outbox_attempts where outbox_id = ${outboxId} order by id`
}

async function lastOutboxId(s: Sender): Promise<number> {
  const [row] = await app.services.sql<{ id: number }[]>`
    select max(id)::int as id from outbox where account_id = ${s.accountId}`
  return row?.id ?? 0
}

async function failureCount(s: Sender): Promise<number> {
  const [row] = await app.services.sql<{ n: number }[]>`
    select consecutive_failures as n from connections where id = ${s.connectionId}`
  return row?.n ?? -1
}

describe('POST /send: a message the server took for some recipients', () => {
  it('is sent to the others, answers 200 naming the refused one and why, and keeps every outcome', async () => {
    const s = await sender({ recipientReplies: { 'cc@example.com': REJECTED } })
    const reply = await postSend(app, s.key, email({ cc: 'cc@example.com' }))
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({
      success: true,
      messageId: expect.any(String),
      outboxId: expect.any(Number),
      from: s.from,
      message: expect.stringMatching(
        /1 of 2 recipients.*cc@example\.com.*550 5\.7\.1 Recipient address rejected/,
      ),
      refusedRecipients: [
        { email: 'cc@example.com', reply: '550 5.7.1 Recipient address rejected', permanent: true },
      ],
    })
    // Sent to the one the server took, the Cc header intact.
    const [message] = s.sink.messages
    expect(message?.envelope.to).toEqual(['ada@example.com'])
    expect(message?.headers.get('cc')).toContain('cc@example.com')

    const saved = await record(reply.body.outboxId as number)
    expect(saved.recipients).toEqual([
      { address: 'ada@example.com', status: 'accepted', reply: null },
      { address: 'cc@example.com', status: 'refused', reply: '550 5.7.1 Recipient address rejected' },
    ])
    // "sent" means every recipient got it; the outbox says which did not and why.
    expect(saved.status).toBe('failed')
    expect(saved.error).toMatch(/Delivered to 1 of 2 recipients; cc@example\.com: 550 5\.7\.1/)
    expect(await history(reply.body.outboxId as number)).toEqual([
      { attempt: 1, outcome: 'delivered', recipients: saved.recipients },
    ])
    // One message counts once.
    expect(await quotaUsed(app, s.connectionId)).toBe(1)
  })

  it('a Bcc refused for now (450) is said, as not permanent', async () => {
    const s = await sender({ recipientReplies: { 'hidden@example.com': BUSY } })
    const reply = await postSend(app, s.key, email({ bcc: 'hidden@example.com' }))
    expect(reply.status).toBe(200)
    expect(reply.body.refusedRecipients).toEqual([
      { email: 'hidden@example.com', reply: '450 4.2.1 Mailbox busy, try again later', permanent: false },
    ])
    expect(s.sink.messages[0]?.envelope.to).toEqual(['ada@example.com'])
  })

  it('replays under the same Idempotency-Key with the same refused recipients', async () => {
    const s = await sender({ recipientReplies: { 'cc@example.com': REJECTED } })
    const first = await postSend(app, s.key, email({ cc: 'cc@example.com' }), 'partial-1')
    const again = await postSend(app, s.key, email({ cc: 'cc@example.com' }), 'partial-1')
    expect(again.status).toBe(200)
    expect(again.body).toEqual({ ...first.body, replayed: true })
    expect(s.sink.messages).toHaveLength(1)
  })
})

describe('POST /send: every recipient refused', () => {
  it('a mix of 550 and 450 is read per recipient: 500 with both replies, not push-back', async () => {
    const s = await sender({ recipientReplies: { 'ada@example.com': REJECTED, 'cc@example.com': BUSY } })
    const reply = await postSend(app, s.key, email({ cc: 'cc@example.com' }))
    expect(reply.status).toBe(500)
    expect(reply.body).toEqual({ code: 'INTERNAL_ERROR', message: humanText })
    expect(reply.body.message).toMatch(/ada@example\.com: 550 5\.7\.1.*cc@example\.com: 450 4\.2\.1/)
    const saved = await record(await lastOutboxId(s))
    expect(saved.status).toBe('failed')
    expect(saved.recipients?.map((r) => r.status)).toEqual(['refused', 'deferred'])
    // Nothing was sent: no unit used, and not a failure of the connection.
    expect(await quotaUsed(app, s.connectionId)).toBe(0)
    expect(await dailyUsed(app, s.accountId)).toBe(0)
    expect(await failureCount(s)).toBe(0)
  })

  it('every recipient deferred: 429 RATE_LIMITED (wait and retry), yet no failure of the connection', async () => {
    const s = await sender({ recipientReplies: { 'ada@example.com': THROTTLED } })
    const reply = await postSend(app, s.key, email(), 'deferred-1')
    expect(reply.status).toBe(429)
    expect(reply.body).toMatchObject({ code: 'RATE_LIMITED', details: { retryAfter: expect.any(Number) } })
    expectRetryAfter(reply)
    expect(await failureCount(s)).toBe(0)
    // "429: wait and retry": the same key is a new attempt once the server takes it.
    s.sink.setBehaviour({ recipientReplies: {} })
    const retried = await postSend(app, s.key, email(), 'deferred-1')
    expect(retried.status).toBe(200)
    expect(retried.body.replayed).toBeUndefined()
  })

  it('the only recipient deferred (451 4.3.0 lookup failure): the 429 says it was deferred, with the reply, not that the server asked to slow down', async () => {
    const s = await sender({
      recipientReplies: { 'ada@example.com': { code: 451, message: '4.3.0 Temporary lookup failure' } },
    })
    const reply = await postSend(app, s.key, email())
    expect(reply.status).toBe(429)
    expect(reply.body).toMatchObject({ code: 'RATE_LIMITED', details: { retryAfter: expect.any(Number) } })
    expect(reply.body.message).toBe(
      'The SMTP server deferred the recipient ada@example.com for now (try again later): 451 4.3.0 Temporary lookup failure',
    )
  })
})

describe('POST /send: only replies that speak for the whole connection count toward pausing', () => {
  it('one throttled recipient (450 4.7.1 at RCPT) among others: five sends all go, the connection never counts it', async () => {
    const s = await sender({ recipientReplies: { 'throttled@example.com': THROTTLED } })
    for (let i = 0; i < 5; i++) {
      const reply = await postSend(app, s.key, email({ cc: 'throttled@example.com' }))
      expect(reply.status).toBe(200)
    }
    expect(await failureCount(s)).toBe(0)
    const sixth = await postSend(app, s.key, email())
    expect(sixth.status).toBe(200)
    expect(s.sink.messages).toHaveLength(6)
  })

  it.each([
    ['a 4xx to MAIL FROM', { rejectMailFrom: { code: 451, message: '4.3.0 Temporary system problem' } }],
    ['a 4xx to the message', { rejectData: { code: 452, message: '4.3.1 Insufficient system storage' } }],
    ['421 at RCPT', { recipientReplies: { 'ada@example.com': { code: 421, message: '4.7.0 Closing' } } }],
    [
      'a quota reply at RCPT',
      {
        recipientReplies: {
          'ada@example.com': { code: 550, message: '5.4.5 Daily user sending quota exceeded' },
        },
      },
    ],
    ['421 to every connection', { rejectConnection: { code: 421, message: '4.7.0 Too busy, try later' } }],
  ])('%s: 429 RATE_LIMITED, counted once against the connection', async (_what, behaviour) => {
    // The server behaves once the connection is saved (its login is tested first).
    const s = await sender({})
    s.sink.setBehaviour(behaviour)
    const reply = await postSend(app, s.key, email())
    expect(reply.status).toBe(429)
    expect(reply.body).toMatchObject({ code: 'RATE_LIMITED' })
    expect(await failureCount(s)).toBe(1)
  })

  it('a permanent refusal of the sender (550 to MAIL FROM): 500, not counted against the connection', async () => {
    const s = await sender({ rejectMailFrom: { code: 550, message: '5.7.1 Sender not allowed' } })
    const reply = await postSend(app, s.key, email({ cc: 'cc@example.com' }))
    expect(reply.status).toBe(500)
    expect(reply.body.message).toBe('550 5.7.1 Sender not allowed')
    expect(await failureCount(s)).toBe(0)
  })
})
