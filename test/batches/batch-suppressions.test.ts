/**
 * A batch's recipient the server says does not exist is suppressed; the next batch handles it
 * without any SMTP attempt, counting it failed with its reason, and a retry of the failures skips
 * it again. Marketing entries apply to batches, never to /send.
 */
import { describe, expect, it } from 'vitest'
import { batchFailures } from '../../src/batches/batches.ts'
import { useTestApp } from '../support/app.ts'
import { template, useBatchWorker } from '../support/batch-processing.ts'
import { audienceWith, createdBatch, mailroomJson, waitForBatchEnd } from '../support/batches.ts'
import { postSend, startSender } from '../support/sending.ts'

const app = useTestApp()
useBatchWorker(app)

/** Every RCPT TO the sink was asked, through any message. */
function asked(messages: { envelope: { to: string[] } }[]): string[] {
  return messages.flatMap((m) => m.envelope.to)
}

describe('suppressions in batches', () => {
  it('a 550 5.1.1 leaves the address suppressed: the next batch and a /send skip it', {
    timeout: 30_000,
  }, async () => {
    const s = await startSender(app, 'batchsup', {
      plan: 'pro',
      behaviour: { rejectRecipients: ['gone@example.com'] },
    })
    const first = await createdBatch(app, s.key, {
      template,
      recipients: ['ok1@example.com', 'gone@example.com'],
    })
    expect(await waitForBatchEnd(app, s.key, first)).toMatchObject({ sent_count: 1, failed_count: 1 })
    const entry = await app.request('/suppressions/gone%40example.com', { key: s.key })
    expect((await entry.json()).suppression).toMatchObject({ reason: 'hard_bounce', scope: 'all' })

    // The server would take it now: only the suppression keeps it out.
    s.sink.setBehaviour({ rejectRecipients: [] })
    const before = s.sink.messages.length
    const second = await createdBatch(app, s.key, {
      template,
      recipients: ['ok2@example.com', 'GONE@example.com'],
    })
    expect(await waitForBatchEnd(app, s.key, second)).toMatchObject({
      status: 'completed',
      sent_count: 1,
      failed_count: 1,
    })
    expect((await batchFailures(app.services.sql, second)).map((f) => [f.email, f.error])).toEqual([
      ['GONE@example.com', 'suppressed (hard_bounce)'],
    ])
    expect(asked(s.sink.messages.slice(before))).toEqual(['ok2@example.com'])

    // Retrying the failures skips it again.
    await mailroomJson(app.db.url, ['batch', 'retry', String(second)])
    expect(await waitForBatchEnd(app, s.key, second)).toMatchObject({ sent_count: 1, failed_count: 1 })
    expect(asked(s.sink.messages.slice(before))).toEqual(['ok2@example.com'])

    // /send: the only recipient suppressed answers 422, nothing sent.
    const sent = await postSend(app, s.key, { to: 'gone@example.com', subject: 'Hi', text_body: 'Hi' })
    expect(sent).toMatchObject({ status: 422, body: { code: 'RECIPIENT_SUPPRESSED' } })
    expect(asked(s.sink.messages.slice(before))).toEqual(['ok2@example.com'])

    // GET /emails/{id}: the recipient shows as suppressed with its reason.
    const [record] = await app.services.sql<{ id: number }[]>`
      select id from outbox where batch_id = ${second} and lower(to_addresses[1]) = 'gone@example.com'`
    const email = await (await app.request(`/emails/${record?.id}`, { key: s.key })).json()
    expect(email.email.recipients).toEqual([
      { email: 'GONE@example.com', status: 'suppressed', reply: 'suppressed (hard_bounce)' },
    ])
  })

  it('a marketing entry keeps an address out of batches, not out of /send', { timeout: 30_000 }, async () => {
    const s = await startSender(app, 'batchmkt', { plan: 'pro' })
    await app.request('/suppressions', {
      key: s.key,
      body: { emails: ['news@example.com'], scope: 'marketing' },
    })
    const audience = await audienceWith(app, s.key, [
      { email: 'news@example.com' },
      { email: 'other@example.com' },
    ])
    const id = await createdBatch(app, s.key, { template, audience_id: audience })
    expect(await waitForBatchEnd(app, s.key, id)).toMatchObject({ sent_count: 1, failed_count: 1 })
    expect((await batchFailures(app.services.sql, id)).map((f) => f.error)).toEqual(['suppressed (manual)'])
    expect(asked(s.sink.messages)).toEqual(['other@example.com'])

    const sent = await postSend(app, s.key, { to: 'news@example.com', subject: 'Receipt', text_body: 'Hi' })
    expect(sent.status).toBe(200)
    expect(asked(s.sink.messages)).toContain('news@example.com')
  })
})
