/**
 * A batch's reply_to, extra headers and attachments go with every one of its emails, in each of
 * its modes, as the SMTP server receives them; the files are stored once, with the batch; an
 * audience batch refuses the List-Unsubscribe headers Mailroom sets itself.
 */
import { randomBytes } from 'node:crypto'
import { beforeAll, describe, expect, it } from 'vitest'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import { useTestApp } from '../support/app.ts'
import { addresses, audienceWith, createdBatch, postBatch, waitForBatchEnd } from '../support/batches.ts'
import { validationBody } from '../support/matchers.ts'
import { leaves, parseMime } from '../support/mime.ts'
import { type Sender, startSender } from '../support/sending.ts'
import type { ReceivedMessage } from '../support/smtp-sink.ts'

const app = useTestApp()

beforeAll(async () => {
  await app.worker({ retry: retryPolicy(50, 3, 50) })
})

const file = randomBytes(3000)
const FIELDS = {
  reply_to: 'desk@example.com',
  headers: { 'X-Campaign': 'spring' },
  attachments: [{ filename: 'price-list.pdf', content: file.toString('base64') }],
}

function expectFields(message: ReceivedMessage | undefined): void {
  expect(message?.headers.get('reply-to')).toBe('desk@example.com')
  expect(message?.headers.get('x-campaign')).toBe('spring')
  const pdf = leaves(parseMime(message?.raw ?? '')).find((part) => part.type === 'application/pdf')
  expect(pdf?.content).toEqual(file)
}

async function sent(sender: Sender, body: Record<string, unknown>, count: number) {
  const id = await createdBatch(app, sender.key, { ...body, ...FIELDS })
  expect((await waitForBatchEnd(app, sender.key, id)).status).toBe('completed')
  expect(sender.sink.messages).toHaveLength(count)
  const [stored] = await app.services.sql<{ files: number }[]>`
    select count(*)::int as files from batch_attachment_contents where batch_id = ${id}`
  expect(stored?.files).toBe(1)
  return id
}

describe('reply_to, headers and attachments of a batch', () => {
  it('go with every email of an `emails` batch', async () => {
    const sender = await startSender(app, 'batch-emails', { plan: 'pro' })
    const emails = addresses('e', 3).map((to) => ({ to, subject: 'Hi', text_body: 'Hello' }))
    await sent(sender, { emails }, 3)
    for (const message of sender.sink.messages) expectFields(message)
  })

  it('go with every email of a template batch to recipients', async () => {
    const sender = await startSender(app, 'batch-recipients', { plan: 'pro' })
    const template = { subject: 'Hi {{name}}', html_body: '<p>Hello</p>' }
    await sent(sender, { template, recipients: addresses('r', 3) }, 3)
    for (const message of sender.sink.messages) expectFields(message)
  })

  it('go with every email of an audience batch, beside the List-Unsubscribe Mailroom sets', async () => {
    const sender = await startSender(app, 'batch-audience', { plan: 'pro' })
    const members = addresses('m', 2).map((email) => ({ email }))
    const audience_id = await audienceWith(app, sender.key, members)
    await sent(sender, { template: { subject: 'Hi', text_body: 'Hello' }, audience_id }, 2)
    for (const message of sender.sink.messages) {
      expectFields(message)
      expect(message.headers.get('list-unsubscribe')).toMatch(/^<http/)
    }
  })

  it('refuses List-Unsubscribe headers on an audience batch only, and the rules of an email', async () => {
    const sender = await startSender(app, 'batch-refused', { plan: 'pro' })
    const audience_id = await audienceWith(app, sender.key, [{ email: 'a@example.com' }])
    const template = { subject: 'Hi', text_body: 'Hello' }
    const headers = {
      'list-unsubscribe': '<https://example.com/u>',
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    }
    const toAudience = await postBatch(app, sender.key, { template, audience_id, headers })
    expect(toAudience).toEqual({
      status: 400,
      body: validationBody([
        { path: ['headers', 'list-unsubscribe'], code: 'custom' },
        { path: ['headers', 'List-Unsubscribe-Post'], code: 'custom' },
      ]),
    })
    const toRecipients = await postBatch(app, sender.key, {
      template,
      recipients: ['b@example.com'],
      headers,
    })
    expect(toRecipients.status).toBe(200)
    const bad = await postBatch(app, sender.key, {
      template,
      recipients: ['b@example.com'],
      reply_to: addresses('x', 11),
      attachments: [{ filename: 'a.bin', content: 'AA=' }],
    })
    expect(bad).toEqual({
      status: 400,
      body: validationBody([
        { path: ['reply_to'], code: 'too_big' },
        { path: ['attachments', 0, 'content'], code: 'invalid_format' },
      ]),
    })
  })

  it('keeps the items of `emails` as the specification has them: no other property', async () => {
    const sender = await startSender(app, 'batch-items', { plan: 'pro' })
    const reply = await postBatch(app, sender.key, {
      emails: [{ to: 'a@example.com', subject: 'Hi', text_body: 'Hello', reply_to: 'b@example.com' }],
    })
    expect(reply.status).toBe(400)
    expect(reply.body.error.issues[0].path).toEqual(['emails', 0])
  })
})
