import { describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from '../support/app.ts'
import { expectRedirect, signedIn, textOf } from '../support/dashboard.ts'
import { startSink } from '../support/sending.ts'

const app = useTestApp()

describe('connections', () => {
  it('say before deleting what happens to the queued mail, and fail it when deleted', async () => {
    const sink = await startSink(app)
    const owner = await seedAccount(app, {
      plan: 'pro',
      connection: { ...sink.login, from: 'q@example.com' },
    })
    const id = owner.connection?.id as number
    const { browser } = await signedIn(app, { account: owner.account })
    // Paused: queued mail waits (a disabled connection would refuse it).
    expectRedirect(await browser.post(`/dashboard/connections/${id}/pause`), `/dashboard/connections/${id}`)
    for (const n of [1, 2]) {
      const res = await app.request('/enqueue', {
        key: owner.key,
        body: { to: `${n}@example.com`, subject: 's', text_body: 't' },
      })
      expect(res.status).toBe(200)
    }
    const confirm = await browser.get(`/dashboard/connections/${id}/delete`)
    expect(textOf(confirm.html)).toContain(
      '2 queued messages will not be sent: they fail with “connection deleted”.',
    )
    // Its only connection: no other becomes the default.
    expect(textOf(confirm.html)).toContain('It is the account’s only connection')
    expect(textOf(confirm.html)).not.toContain('becomes the default')
    expectRedirect(await browser.post(`/dashboard/connections/${id}/delete`), '/dashboard/connections')
    const failed = await app.services.sql`
      select error from outbox where account_id = ${owner.account.id} and status = 'failed'`
    expect(failed.map((r) => r.error)).toEqual(['connection deleted', 'connection deleted'])
  })

  it('edit quota and rate, pause for a while and resume, with the API’s ranges', async () => {
    const sink = await startSink(app)
    const owner = await seedAccount(app, {
      plan: 'pro',
      connection: { ...sink.login, from: 'e@example.com' },
    })
    const id = owner.connection?.id as number
    const { browser } = await signedIn(app, { account: owner.account })
    await browser.get(`/dashboard/connections/${id}`)
    expectRedirect(
      await browser.post(`/dashboard/connections/${id}`, { quota: '500', per: 'hour', rate: '120' }),
      `/dashboard/connections/${id}`,
    )
    const edit = await browser.get(`/dashboard/connections/${id}`)
    expect(textOf(edit.html)).toContain('Connection e@example.com saved.')
    const bad = await browser.post(`/dashboard/connections/${id}`, { quota: '', rate: '60001' })
    expect(bad.status).toBe(400)
    expect(textOf(bad.html)).toContain(
      'The rate must be a whole number of messages per minute from 1 to 60000.',
    )
    await browser.get(`/dashboard/connections/${id}`)
    expectRedirect(
      await browser.post(`/dashboard/connections/${id}/pause`, { minutes: '30' }),
      `/dashboard/connections/${id}`,
    )
    const list = textOf((await browser.get('/dashboard/connections')).html)
    expect(list).toContain('500 per hour')
    expect(list).toMatch(/paused until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC by hand/)
    expectRedirect(await browser.post(`/dashboard/connections/${id}/resume`), `/dashboard/connections/${id}`)
    expect(textOf((await browser.get('/dashboard/connections')).html)).toContain('active')
  })
})
