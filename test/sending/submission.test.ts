/**
 * A message submitted over SMTP (acceptSubmission, the relay door's call once DATA is done):
 * stored durably with its bytes, then queued mail like /enqueue's, sent as the app wrote it but
 * for Bcc, the tags header and a missing Message-ID or Date.
 */
import { describe, expect, it } from 'vitest'
import { AppError } from '../../src/app-error.ts'
import { purgeExpired } from '../../src/sending/retention.ts'
import { useTestApp } from '../support/app.ts'
import { useDelivery } from '../support/delivery.ts'
import { keyedRuns, waitForOutbox, waitForOutboxStatus } from '../support/queue.ts'
import type { ReceivedMessage } from '../support/smtp-sink.ts'
import { crlf, submitted } from '../support/submissions.ts'

const app = useTestApp()
const { sender, record } = useDelivery(app)

/** A multipart message with what a rewriter would disturb: folded headers, trailing spaces, a dot line, tabs. */
function messageFrom(
  from: string,
  { head = [] as string[], bcc = true } = {},
): { headers: string[]; body: string } {
  return {
    headers: [
      `From: "The App" <${from}>`,
      'To: Ada <ada@example.com>,',
      '\tAlan <alan@example.com>',
      'Cc: =?UTF-8?Q?Gr=C3=A2ce?= <grace@example.com>',
      ...(bcc ? ['Bcc: hidden@example.com'] : []),
      'Subject: =?UTF-8?Q?Caf=C3=A9?= order  #7',
      'X-App: kept   as is',
      ...head,
      'MIME-Version: 1.0',
      'Content-Type: multipart/alternative; boundary="b1"',
    ],
    body: crlf(
      '',
      'preamble',
      '--b1',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
      '',
      'Héllo   ',
      '.a line that starts with a dot',
      'a\ttab and  two spaces',
      '--b1',
      'Content-Type: text/html',
      '',
      '<p>Hi</p>',
      '--b1--',
      '',
    ),
  }
}

const RECIPIENTS = ['ada@example.com', 'alan@example.com', 'grace@example.com', 'hidden@example.com']

describe('a submitted message goes on as the app wrote it', () => {
  it('arrives byte for byte but for its Bcc header, its own Message-ID and Date kept, to the envelope from the connection', async () => {
    const s = await sender()
    const own = ['Message-ID: <app-own-id@app.example>', 'Date: Tue, 1 Dec 2026 10:00:00 +0100']
    const m = messageFrom(s.from, { head: own })
    const accepted = await submitted(app, s, crlf(...m.headers, m.body), { recipients: RECIPIENTS })
    expect(accepted.messageId).toBe('<app-own-id@app.example>')

    const [received] = (await s.sink.waitForMessages(1, 5_000)) as [ReceivedMessage]
    const expected = crlf(...m.headers.filter((line) => !line.startsWith('Bcc:')), m.body)
    expect(received.raw).toBe(expected)
    expect(received.envelope.from).toBe(s.from)
    expect([...received.envelope.to].sort()).toEqual([...RECIPIENTS].sort())
    // Its body is 8-bit text, declared as such to a server that offers 8BITMIME.
    expect(s.sink.declaredBodies).toEqual(['8BITMIME'])

    const sent = await waitForOutboxStatus(app, s.accountId, accepted.outboxId, 'sent')
    expect(sent).toMatchObject({
      from: s.from,
      to: ['ada@example.com', 'alan@example.com'],
      cc: ['grace@example.com'],
      bcc: ['hidden@example.com'],
      subject: 'Café order  #7',
      message_id: '<app-own-id@app.example>',
      source: 'smtp',
      attempts: 1,
    })
  })

  it('adds a Message-ID and a Date after the headers when the app gave none, and changes nothing else', async () => {
    const s = await sender()
    const m = messageFrom(s.from, { bcc: false })
    const before = Date.now()
    const accepted = await submitted(app, s, crlf(...m.headers, m.body), { recipients: ['ada@example.com'] })
    const [received] = (await s.sink.waitForMessages(1, 5_000)) as [ReceivedMessage]

    expect(accepted.messageId).toMatch(new RegExp(`^<[^@>]+@${s.from.split('@')[1]}>$`))
    expect(received.headers.get('message-id')).toBe(accepted.messageId)
    const date = received.headers.get('date') ?? ''
    expect(date).toMatch(/^\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d \+0000$/)
    expect(Date.parse(date)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000)
    const added = [`Message-ID: ${accepted.messageId}`, `Date: ${date}`]
    expect(received.raw).toBe(crlf(...m.headers, ...added, m.body))
    const sent = await waitForOutboxStatus(app, s.accountId, accepted.outboxId, 'sent')
    expect(sent.message_id).toBe(accepted.messageId)
  })

  it('sends a deferred recipient the same bytes later, and only that recipient', async () => {
    const s = await sender({
      behaviour: { recipientReplies: { 'alan@example.com': { code: 450, message: '4.2.1 Try later' } } },
    })
    const m = messageFrom(s.from, { bcc: false })
    const accepted = await submitted(app, s, crlf(...m.headers, m.body), {
      recipients: ['ada@example.com', 'alan@example.com'],
    })
    const [first] = (await s.sink.waitForMessages(1, 5_000)) as [ReceivedMessage]
    expect(first.envelope.to).toEqual(['ada@example.com'])
    await waitForOutbox(app, s.accountId, accepted.outboxId, (r) => r.status === 'queued' && r.attempts >= 1)
    s.sink.setBehaviour({ recipientReplies: {} })

    const sent = await waitForOutboxStatus(app, s.accountId, accepted.outboxId, 'sent', 15_000)
    const [, second] = s.sink.messages as [ReceivedMessage, ReceivedMessage]
    expect(second.envelope.to).toEqual(['alan@example.com'])
    expect(second.raw).toBe(first.raw)
    expect(sent.recipients?.map((r) => [r.address, r.status])).toEqual([
      ['ada@example.com', 'accepted'],
      ['alan@example.com', 'accepted'],
    ])
  })
})

describe('the X-Mailroom-Tags header', () => {
  it("becomes the email's tags, in order, and is not sent", async () => {
    const s = await sender()
    const message = crlf(
      'To: ada@example.com',
      'Subject: Tagged',
      'X-Mailroom-Tags: campaign=spring-sale,',
      ' tier=gold',
      '',
      'Body',
      '',
    )
    const accepted = await submitted(app, s, message, { recipients: ['ada@example.com'] })
    const [received] = (await s.sink.waitForMessages(1, 5_000)) as [ReceivedMessage]
    expect(received.headers.has('x-mailroom-tags')).toBe(false)
    expect(received.raw).toContain('Subject: Tagged\r\nMessage-ID: ')
    const sent = await waitForOutboxStatus(app, s.accountId, accepted.outboxId, 'sent')
    expect(sent.tags).toEqual([
      { name: 'campaign', value: 'spring-sale' },
      { name: 'tier', value: 'gold' },
    ])
  })

  it.each([
    ['a pair without a value', 'campaign'],
    ['a character tags do not take', 'campaign=spring sale'],
    ['a name given twice', 'tier=gold, tier=silver'],
    ['more than 10 tags', Array.from({ length: 11 }, (_, i) => `t${i}=v`).join(', ')],
  ])('refuses %s, naming the header, and stores nothing', async (_, value) => {
    const s = await sender()
    const message = crlf(
      'To: ada@example.com',
      'Subject: Tagged',
      `X-Mailroom-Tags: ${value}`,
      '',
      'Body',
      '',
    )
    const refusal = await submitted(app, s, message, { recipients: ['ada@example.com'] }).catch((e) => e)
    expect(refusal).toBeInstanceOf(AppError)
    expect(refusal).toMatchObject({
      code: 'VALIDATION_ERROR',
      message: expect.stringContaining('X-Mailroom-Tags'),
    })
    const [row] = await app.services.sql<{ n: number }[]>`
      select count(*)::int as n from outbox where account_id = ${s.accountId}`
    expect(row?.n).toBe(0)
  })
})

describe('what is stored', () => {
  it('the record, its bytes and its run in one transaction, all there once accepted; the retention purge takes the bytes with the record', async () => {
    const s = await sender()
    await app.stopWorkers()
    try {
      const message = crlf('To: ada@example.com', 'Subject: Kept', '', 'x'.repeat(1_500_000), '')
      const accepted = await submitted(app, s, message, { recipients: ['ada@example.com'] })
      expect(await rawOf(accepted.outboxId)).toMatchObject({ slices: 2, matches: true })
      expect(await keyedRuns(app, `queue:${s.connectionId}`)).toHaveLength(1)
      expect(await record(s, accepted.outboxId)).toMatchObject({ status: 'queued', source: 'smtp' })

      await app.services.sql`
        update outbox set status = 'sent', created_at = now() - interval '100 days' where id = ${accepted.outboxId}`
      await purgeExpired(app.services.sql)
      expect(await rawOf(accepted.outboxId)).toMatchObject({ slices: 0 })
    } finally {
      await app.worker()
    }
  })
})

/** How many slices hold the email's bytes, and whether they add up to its recorded size. */
async function rawOf(outboxId: number): Promise<{ slices: number; matches: boolean }> {
  const [row] = await app.services.sql<{ slices: number; matches: boolean }[]>`
    select count(r.position)::int as slices,
      coalesce(sum(length(r.content)) = (select raw_size from outbox where id = ${outboxId}), false) as matches
    from outbox_raw_slices r where r.outbox_id = ${outboxId}`
  return row ?? { slices: 0, matches: false }
}
