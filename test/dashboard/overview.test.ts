import { describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from '../support/app.ts'
import { signedIn, textOf } from '../support/dashboard.ts'
import { startSink } from '../support/sending.ts'

const app = useTestApp()

describe('the overview', () => {
  it('shows the plan, today’s sends against the Free limit, quotas and a 30-day chart', async () => {
    const sink = await startSink(app)
    const owner = await seedAccount(app, {
      connection: { ...sink.login, from: 'o@example.com', quota: { quota: 50, per: 'day' }, rate: 6000 },
    })
    for (const n of [1, 2, 3]) {
      expect(
        (
          await app.request('/send', {
            key: owner.key,
            body: { to: `${n}@example.com`, subject: 's', text_body: 't' },
          })
        ).status,
      ).toBe(200)
    }
    const { browser } = await signedIn(app, { account: owner.account })
    const page = await browser.get('/dashboard')
    const text = textOf(page.html)
    expect(text).toContain('Plan Free')
    expect(text).toContain('3 of 100')
    expect(text).toContain('3 of 50 per day')
    expect(text).toContain('3 sent 0 failed')
    expect(page.html).toContain('<svg')
    expect((page.html.match(/class="sent"/g) ?? []).length).toBe(30)
  })
})
