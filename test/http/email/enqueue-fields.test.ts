/**
 * POST /enqueue with reply_to, extra headers and attachments: queued mail keeps them until it
 * ends (through deferrals, the files' bytes too) and the worker sends them as given; once the
 * email has ended only each file's name, type, size and SHA-256 stay on its record.
 */
import { createHash, randomBytes } from 'node:crypto'
import { beforeAll, describe, expect, it } from 'vitest'
import { retryPolicy } from '../../../src/queue/retry-policy.ts'
import { useTestApp } from '../../support/app.ts'
import { validationBody } from '../../support/matchers.ts'
import { decodeWords, leaves, parseMime } from '../../support/mime.ts'
import { email, enqueued, postEnqueue, waitFor } from '../../support/queue.ts'
import { startSender } from '../../support/sending.ts'

const app = useTestApp()

beforeAll(async () => {
  // Deferred mail is tried again 200 ms later.
  await app.worker({ retry: retryPolicy(200, 3, 100) })
})

const BUSY = { code: 450, message: '4.2.1 Mailbox busy, try again later' }

async function stored(id: number) {
  const [record] = await app.services.sql<
    { status: string; headers: unknown; attachments: unknown; contents: number }[]
  >`
    select status, headers, attachments,
      (select count(*)::int from outbox_attachment_contents where outbox_id = o.id) as contents
    from outbox o where id = ${id}`
  return record
}

describe('queued mail with reply_to, headers and attachments', () => {
  it('keeps them through a deferral, sends them exactly, then keeps only the files’ summaries', async () => {
    const s = await startSender(app, 'queued-fields', {
      plan: 'pro',
      behaviour: { recipientReplies: { 'ada@example.com': BUSY } },
    })
    const report = randomBytes(2000)
    const logo = randomBytes(100)
    const id = await enqueued(
      app,
      s.key,
      email({
        to: 'ada@example.com',
        html_body: '<img src="cid:logo">',
        reply_to: ['desk@example.com', 'help@example.com'],
        headers: { 'X-Ticket': '77', 'X-Note': 'Grüße' },
        attachments: [
          { filename: 'report.pdf', content: report.toString('base64') },
          { filename: 'logo.png', content: logo.toString('base64'), content_id: 'logo' },
        ],
      }),
    )
    await waitFor('a deferral', async () => {
      const record = await stored(id)
      return record?.status === 'queued' &&
        (await app.services.sql`select 1 from outbox where id = ${id} and attempts >= 1`).length > 0
        ? record
        : undefined
    })
    expect((await stored(id))?.contents).toBe(2)
    s.sink.setBehaviour({ recipientReplies: {} })
    await waitFor('the send', async () => ((await stored(id))?.status === 'sent' ? true : undefined))

    const [message] = s.sink.messages
    expect(message?.headers.get('reply-to')).toBe('desk@example.com, help@example.com')
    expect(message?.headers.get('x-ticket')).toBe('77')
    expect(decodeWords(message?.headers.get('x-note') ?? '')).toBe('Grüße')
    const root = parseMime(message?.raw ?? '')
    expect(root.type).toBe('multipart/mixed')
    const parts = leaves(root)
    const pdf = parts.find((part) => part.type === 'application/pdf')
    const inline = parts.find((part) => part.headers.get('content-id') === '<logo>')
    expect(pdf?.content).toEqual(report)
    expect(inline?.content).toEqual(logo)
    expect(inline?.headers.get('content-disposition')).toMatch(/^inline\b/)

    const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')
    expect(await stored(id)).toEqual({
      status: 'sent',
      headers: { 'X-Ticket': '77', 'X-Note': 'Grüße' },
      attachments: [
        { filename: 'report.pdf', content_type: 'application/pdf', size: 2000, sha256: sha256(report) },
        {
          filename: 'logo.png',
          content_type: 'image/png',
          size: 100,
          sha256: sha256(logo),
          content_id: 'logo',
        },
      ],
      contents: 0,
    })
  })

  it('refuses them by the same rules as /send', async () => {
    const s = await startSender(app, 'queued-refused', { plan: 'pro' })
    const reply = await postEnqueue(
      app,
      s.key,
      email({ headers: { bcc: 'x@example.com' }, attachments: [{ filename: 'a', content: 'A' }] }),
    )
    expect({ status: reply.status, body: reply.body }).toEqual({
      status: 400,
      body: validationBody([
        { path: ['headers', 'bcc'], code: 'custom' },
        { path: ['attachments', 0, 'content'], code: 'invalid_format' },
      ]),
    })
  })
})
