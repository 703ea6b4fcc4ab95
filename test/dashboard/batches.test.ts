import { describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from '../support/app.ts'
import { expandNow } from '../support/batches.ts'
import { expectRedirect, signedIn, textOf } from '../support/dashboard.ts'
import { json } from '../support/dashboard-pages.ts'
import { startSink } from '../support/sending.ts'

const app = useTestApp()

describe('batches', () => {
  it('retry queues the failed recipients again', async () => {
    const sink = await startSink(app)
    const owner = await seedAccount(app, {
      plan: 'pro',
      connection: { ...sink.login, from: 'r@example.com' },
    })
    const created = await json(
      await app.request('/send/batch', {
        key: owner.key,
        body: {
          name: 'Retry me',
          recipients: ['a@example.com', 'b@example.com'],
          template: { subject: 's', text_body: 't' },
        },
      }),
    )
    // No worker here: its recipients are moved into the outbox as it would, then made to fail.
    await expandNow(app, created.batch_id as number)
    await app.services.sql`
      update outbox set status = 'failed', error = '550 no', attempts = 1, next_attempt_at = null
      where batch_id = ${created.batch_id as number}`
    const { browser } = await signedIn(app, { account: owner.account })
    const page = await browser.get(`/dashboard/batches/${created.batch_id}`)
    expect(textOf(page.html)).toContain('Retry the 2 failed')
    expect(page.html).not.toContain('data-live')
    expectRedirect(
      await browser.post(`/dashboard/batches/${created.batch_id}/retry`),
      `/dashboard/batches/${created.batch_id}`,
    )
    const after = await browser.get(`/dashboard/batches/${created.batch_id}`)
    expect(textOf(after.html)).toContain('2 failed recipients queued again.')
    expect(after.html).toContain(`data-live="/dashboard/batches/${created.batch_id}/live"`)
    const statuses = await app.services
      .sql`select status from outbox where batch_id = ${created.batch_id as number}`
    expect(statuses.map((r) => r.status)).toEqual(['queued', 'queued'])
    // Each record's history keeps the failure the retry undid, and who retried it.
    const [one] = await app.services.sql<{ id: number }[]>`
      select id from outbox where batch_id = ${created.batch_id as number} order by id limit 1`
    const detail = textOf((await browser.get(`/dashboard/outbox/${one?.id}`)).html)
    expect(detail).toMatch(
      /Queued [\d: -]+ UTC none Failed [\d: -]+ UTC 550 no Retried from the batch page [\d: -]+ UTC none/,
    )
    const list = textOf((await browser.get('/dashboard/batches')).html)
    expect(list).toContain('Retry me')
  })
})
