/**
 * The dashboard's message page shows a scheduled message's time and a Cancel link while it can
 * be canceled, which leads to the one confirmation page and cancels it; the batch page cancels a
 * batch the same way; the outbox filters by the new statuses.
 */
import { describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from '../support/app.ts'
import { HOUR } from '../support/clock.ts'
import { expectRedirect, signedIn, textOf } from '../support/dashboard.ts'
import { json } from '../support/dashboard-pages.ts'
import { email, enqueued } from '../support/queue.ts'
import { fromNow } from '../support/scheduling.ts'
import { startSink } from '../support/sending.ts'

const app = useTestApp()

async function owner() {
  const sink = await startSink(app)
  return seedAccount(app, {
    plan: 'pro',
    connection: { ...sink.login, from: `dash${Date.now()}@example.com` },
  })
}

describe('canceling from the dashboard', () => {
  it('shows a scheduled message’s time with Cancel, confirms, cancels, and then offers it no more', async () => {
    const account = await owner()
    const id = await enqueued(
      app,
      account.key,
      email({ subject: 'Monday news', scheduled_at: fromNow(2 * HOUR) }),
    )
    const { browser } = await signedIn(app, { account: account.account })

    const detail = await browser.get(`/dashboard/outbox/${id}`)
    expect(textOf(detail.html)).toMatch(/scheduled Cancel… Scheduled for \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/)
    expect(detail.html).toContain(`href="/dashboard/outbox/${id}/cancel"`)

    const confirm = await browser.get(`/dashboard/outbox/${id}/cancel`)
    expect(textOf(confirm.html)).toContain(`Cancel message ${id}?`)
    expect(textOf(confirm.html)).toContain('It will never be sent, at its scheduled time or later.')

    expectRedirect(await browser.post(`/dashboard/outbox/${id}/cancel`), `/dashboard/outbox/${id}`)
    const after = await browser.get(`/dashboard/outbox/${id}`)
    expect(textOf(after.html)).toContain(`Message ${id} canceled: it will not be sent.`)
    expect(textOf(after.html)).toMatch(/Status canceled Scheduled for/)
    expect(after.html).not.toContain(`/dashboard/outbox/${id}/cancel`)

    // Once it cannot be canceled, the action is refused on the message's page.
    const again = await browser.post(`/dashboard/outbox/${id}/cancel`)
    expect(again.status).toBe(409)
    expect(textOf(again.html)).toContain('only a scheduled or queued email not yet tried can be canceled')

    const filtered = await browser.get('/dashboard/outbox?status=canceled')
    expect(textOf(filtered.html)).toContain('Monday news')
    expect(textOf((await browser.get('/dashboard/outbox?status=scheduled')).html)).not.toContain(
      'Monday news',
    )
  })

  it('cancels a batch from its page, through the confirmation page', async () => {
    const account = await owner()
    const created = await json(
      await app.request('/send/batch', {
        key: account.key,
        body: {
          name: 'Weekend sale',
          recipients: ['a@example.com', 'b@example.com'],
          template: { subject: 's', text_body: 't' },
          scheduled_at: fromNow(HOUR),
        },
      }),
    )
    const id = created.batch_id as number
    const { browser } = await signedIn(app, { account: account.account })
    const batchPage = textOf((await browser.get(`/dashboard/batches/${id}`)).html)
    expect(batchPage).toMatch(/Scheduled for \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/)
    expect(batchPage).toContain('Cancel the batch…')
    expect(batchPage).not.toContain('Delete the batch')

    expect(textOf((await browser.get(`/dashboard/batches/${id}/cancel`)).html)).toContain(
      'Cancel “Weekend sale”?',
    )
    expectRedirect(await browser.post(`/dashboard/batches/${id}/cancel`), `/dashboard/batches/${id}`)
    const after = textOf((await browser.get(`/dashboard/batches/${id}`)).html)
    expect(after).toContain('Batch “Weekend sale” canceled; 0 messages had been sent.')
    expect(after).toContain('canceled 100% handled')
    expect(after).toContain('Delete the batch')
    expect(after).not.toContain('Cancel the batch…')
  })
})
