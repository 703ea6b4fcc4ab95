import { describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from '../support/app.ts'
import { signedIn } from '../support/dashboard.ts'
import { HOSTILE, json } from '../support/dashboard-pages.ts'
import { startSink } from '../support/sending.ts'

const app = useTestApp()

describe('every value from users is escaped', () => {
  it('on the overview, outbox, batch, audience, member and template pages', async () => {
    const sink = await startSink(app, { rejectRecipients: ['refused@example.com'] })
    const owner = await seedAccount(app, {
      plan: 'pro',
      connection: { ...sink.login, from: 'h@example.com', rate: 6000 },
    })
    const key = owner.key
    const batch = await json(
      await app.request('/send/batch', {
        key,
        body: {
          name: HOSTILE,
          recipients: ['refused@example.com'],
          template: { subject: HOSTILE, text_body: HOSTILE },
        },
      }),
    )
    const sent = await json(
      await app.request('/send', {
        key,
        body: { to: 'ok@example.com', subject: HOSTILE, html_body: HOSTILE },
      }),
    )
    // A server's reply is whatever the server says.
    const [replied] = await app.services.sql<{ id: number }[]>`
      insert into outbox (account_id, status, from_address, to_addresses, subject, message_id, error, html_body)
      values (${owner.account.id}, 'failed', 'h@example.com', '{x@example.com}', 'Reply', '<r@example.com>',
              ${`550 ${HOSTILE}`}, ${HOSTILE})
      returning id`
    const audience = await json(
      await app.request('/audiences', { key, body: { name: HOSTILE, description: HOSTILE } }),
    )
    const audienceId = (audience.audience as { id: number }).id
    await app.request(`/audiences/${audienceId}/members`, {
      key,
      body: { members: [{ email: 'p@example.com', payload: { [HOSTILE]: HOSTILE } }] },
    })
    const template = await json(
      await app.request('/templates', {
        key,
        body: { name: HOSTILE, subject: HOSTILE, html_body: `<b>{{x}}</b>${HOSTILE}` },
      }),
    )
    const { browser } = await signedIn(app, { account: owner.account })
    const paths = [
      '/dashboard/outbox',
      `/dashboard/outbox?q=${encodeURIComponent(HOSTILE)}`,
      `/dashboard/outbox/${sent.outboxId}`,
      `/dashboard/outbox/${replied?.id}`,
      '/dashboard/batches',
      `/dashboard/batches/${batch.batch_id}`,
      '/dashboard/audiences',
      `/dashboard/audiences/${audienceId}`,
      `/dashboard/audiences/${audienceId}?q=${encodeURIComponent(HOSTILE)}`,
      '/dashboard/templates',
      `/dashboard/templates/${(template.template as { id: number }).id}`,
    ]
    for (const path of paths) {
      const page = await browser.get(path)
      expect([path, page.status]).toEqual([path, 200])
      expect([path, page.html.includes('<script>alert')]).toEqual([path, false])
      expect([path, page.html.includes('&lt;script&gt;alert')]).toEqual([path, true])
    }
    // The HTML body, shown only inside the sandboxed frame's srcdoc (escaped as an attribute).
    const detail = await browser.get(`/dashboard/outbox/${replied?.id}`)
    expect(detail.html).toMatch(/<iframe class="html-preview" sandbox="" srcdoc="[^"]*&lt;script&gt;/)
  })
})
