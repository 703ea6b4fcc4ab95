/**
 * GET /emails/{id} shows an email's reply-to addresses, extra headers and each attachment's
 * name, type, size, SHA-256 and Content-ID, never a file's content: after /send, after /enqueue
 * has delivered (when the bytes are gone), for a batch recipient (its batch's) and for a form's
 * message (its submitter). GET /emails lists the reply-to addresses alone. Another account reads
 * none of it.
 */
import { createHash, randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { createForm } from '../../../src/forms/forms.ts'
import { useTestApp } from '../../support/app.ts'
import { createdBatch, waitForBatchEnd } from '../../support/batches.ts'
import { useEmailsApi } from '../../support/emails.ts'
import { humanText } from '../../support/matchers.ts'
import { email, enqueued } from '../../support/queue.ts'
import { postSend, startSender } from '../../support/sending.ts'

const app = useTestApp()
const { emailOf, list, waitForEmail, proSender } = useEmailsApi(app)

const report = randomBytes(1500)
const logo = randomBytes(64)
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

const FIELDS = {
  reply_to: 'desk@example.com, help@example.com',
  headers: { 'X-Ticket': '4411', 'In-Reply-To': '<t-4411@support.example>', 'X-Note': 'Grüße' },
  attachments: [
    { filename: 'report.pdf', content: report.toString('base64') },
    { filename: 'logo', content: logo.toString('base64'), content_type: 'image/png', content_id: 'logo@x' },
  ],
}

/** What GET /emails/{id} shows of FIELDS. */
const SHOWN = {
  reply_to: ['desk@example.com', 'help@example.com'],
  headers: FIELDS.headers,
  attachments: [
    {
      filename: 'report.pdf',
      content_type: 'application/pdf',
      size: 1500,
      sha256: sha256(report),
      content_id: null,
    },
    { filename: 'logo', content_type: 'image/png', size: 64, sha256: sha256(logo), content_id: 'logo@x' },
  ],
}

async function keptContents(id: number): Promise<number> {
  const [row] = await app.services.sql<{ files: number }[]>`
    select count(*)::int as files from outbox_attachment_contents where outbox_id = ${id}`
  return row?.files ?? 0
}

describe('an email’s reply-to, headers and attachments, read back', () => {
  it('GET shows each one after /send, and the list only its reply-to addresses', async () => {
    const s = await startSender(app, 'read-sent')
    const sent = await postSend(app, s.key, { ...email({ html_body: '<img src="cid:logo@x">' }), ...FIELDS })
    expect(sent.status).toBe(200)
    const id = sent.body.outboxId as number

    const { status, body } = await emailOf(s.key, id)
    expect(status).toBe(200)
    expect(body.email).toMatchObject({ id, status: 'sent', ...SHOWN })
    expect(JSON.stringify(body)).not.toContain(report.toString('base64'))

    const listed = (await list(s.key)).body.emails.find((e: { id: number }) => e.id === id)
    expect(listed.reply_to).toEqual(SHOWN.reply_to)
    expect(listed).not.toHaveProperty('headers')
    expect(listed).not.toHaveProperty('attachments')
  })

  it('GET shows each one after /enqueue has delivered, its files’ bytes gone', async () => {
    const s = await proSender('read-queued')
    const id = await enqueued(app, s.key, { ...email(), ...FIELDS })
    const delivered = await waitForEmail(s.key, id, (e) => e.status === 'sent')
    expect(delivered).toMatchObject(SHOWN)
    expect(await keptContents(id)).toBe(0)
    expect(s.sink.messages).toHaveLength(1)
  })

  it('an email without them shows none: [] and {}', async () => {
    const s = await startSender(app, 'read-plain')
    const sent = await postSend(app, s.key, email())
    const { body } = await emailOf(s.key, sent.body.outboxId as number)
    expect(body.email).toMatchObject({ reply_to: [], headers: {}, attachments: [] })
    const [listed] = (await list(s.key)).body.emails
    expect(listed.reply_to).toEqual([])
  })

  it('a batch recipient shows its batch’s, in the list too', async () => {
    const s = await proSender('read-batch')
    const emails = ['a@example.com', 'b@example.com'].map((to) => ({ to, subject: 'Hi', text_body: 'Hello' }))
    const batchId = await createdBatch(app, s.key, { emails, ...FIELDS })
    expect((await waitForBatchEnd(app, s.key, batchId)).status).toBe('completed')
    const { body } = await list(s.key, `?batch_id=${batchId}`)
    expect(body.emails).toHaveLength(2)
    for (const listed of body.emails) {
      expect(listed.reply_to).toEqual(SHOWN.reply_to)
      expect((await emailOf(s.key, listed.id)).body.email).toMatchObject(SHOWN)
    }
  })

  it('a form’s message shows its submitter as reply_to', async () => {
    const s = await startSender(app, 'read-form')
    const form = await createForm(app.services.sql, s.accountId, { name: 'Contact' }, 'http://127.0.0.1')
    const body = new URLSearchParams({ email: 'ann@example.com', message: 'Hi' })
    expect((await app.requestRoot(`/forms/${form.public_id}`, { method: 'POST', body })).status).toBe(200)
    const [listed] = (await list(s.key)).body.emails
    expect(listed.reply_to).toEqual(['ann@example.com'])
    expect((await emailOf(s.key, listed.id)).body.email).toMatchObject({ headers: {}, attachments: [] })
  })

  it('another account reads none of it: 404, and its list leaves the email out', async () => {
    const owner = await startSender(app, 'read-owner')
    const other = await startSender(app, 'read-other')
    const sent = await postSend(app, owner.key, { ...email(), ...FIELDS })
    const id = sent.body.outboxId as number
    expect(await emailOf(other.key, id)).toEqual({
      status: 404,
      body: { code: 'OUTBOX_RECORD_NOT_FOUND', message: humanText },
    })
    const { body } = await list(other.key)
    expect(body.emails.map((e: { id: number }) => e.id)).not.toContain(id)
  })
})
