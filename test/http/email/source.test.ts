/**
 * Every email says where it came from: `api` (POST /send, POST /enqueue), `batch` (each mode of
 * a batch), `form` (a hosted form's notification) or `smtp` (the SMTP relay), in GET /emails/{id}
 * and in GET /emails.
 */
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../../support/app.ts'
import { addresses, audienceWith, createdBatch, waitForBatchEnd } from '../../support/batches.ts'
import { useEmailsApi } from '../../support/emails.ts'
import { submittedForm } from '../../support/forms.ts'
import { enqueued } from '../../support/queue.ts'
import { postSend } from '../../support/sending.ts'
import { crlf, submitted } from '../../support/submissions.ts'

const app = useTestApp()
const { emailOf, list, proSender } = useEmailsApi(app)

describe("an email's source", () => {
  it('is api, batch, form or smtp, the same in GET /emails/{id} and in the list', async () => {
    const s = await proSender('source')
    const sent = await postSend(app, s.key, { to: 'a@example.com', subject: 'Now', text_body: 'x' })
    const queued = await enqueued(app, s.key, { to: 'b@example.com', subject: 'Later', text_body: 'x' })
    const emailsBatch = await createdBatch(app, s.key, {
      emails: [{ to: 'c@example.com', subject: 'Item', text_body: 'x' }],
    })
    const audience_id = await audienceWith(
      app,
      s.key,
      addresses('member', 2).map((email) => ({ email })),
    )
    const audienceBatch = await createdBatch(app, s.key, {
      template: { subject: 'Hi', text_body: 'x' },
      audience_id,
    })
    await submittedForm(app, s.accountId, '192.0.2.7')
    const relayed = await submitted(app, s, crlf('To: d@example.com', 'Subject: Relayed', '', 'x', ''), {
      recipients: ['d@example.com'],
    })
    await waitForBatchEnd(app, s.key, emailsBatch)
    await waitForBatchEnd(app, s.key, audienceBatch)

    const { body } = await list(s.key, '?limit=100')
    const bySubject = new Map<string, string[]>()
    for (const email of body.emails as { id: number; subject: string; source: string }[]) {
      bySubject.set(email.subject, [...(bySubject.get(email.subject) ?? []), email.source])
      expect((await emailOf(s.key, email.id)).body.email.source).toBe(email.source)
    }
    expect(Object.fromEntries(bySubject)).toEqual({
      Now: ['api'],
      Later: ['api'],
      Item: ['batch'],
      Hi: ['batch', 'batch'],
      'New submission: Contact us': ['form'],
      Relayed: ['smtp'],
    })
    expect((await emailOf(s.key, sent.body.outboxId as number)).body.email.source).toBe('api')
    expect((await emailOf(s.key, queued)).body.email.source).toBe('api')
    expect((await emailOf(s.key, relayed.outboxId)).body.email.source).toBe('smtp')
  })
})
