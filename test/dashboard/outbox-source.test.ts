/**
 * The dashboard's message page says where the email came from: the API, or the SMTP relay (sent
 * as the app wrote it).
 */
import { describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from '../support/app.ts'
import { signedIn, textOf } from '../support/dashboard.ts'
import { json } from '../support/dashboard-pages.ts'
import { startSink } from '../support/sending.ts'
import { crlf, submitted } from '../support/submissions.ts'

const app = useTestApp()

describe('the message page’s source', () => {
  it('is API for a /send, and SMTP relay for a submitted message, whose content is not shown', async () => {
    const sink = await startSink(app)
    const from = 'relay-page@example.com'
    const seeded = await seedAccount(app, { plan: 'pro', connection: { ...sink.login, from, rate: 6000 } })
    const sent = (await json(
      await app.request('/send', {
        key: seeded.key,
        body: { to: 'ada@example.com', subject: 'Now', text_body: 'x' },
      }),
    )) as { outboxId: number }
    const relayed = await submitted(
      app,
      { key: seeded.key, from },
      crlf('To: ada@example.com', '', 'x', ''),
      {
        recipients: ['ada@example.com'],
      },
    )
    const owner = (await signedIn(app, { account: seeded.account })).browser

    const api = textOf((await owner.get(`/dashboard/outbox/${sent.outboxId}`)).html)
    expect(api).toContain('Source API')
    const smtp = textOf((await owner.get(`/dashboard/outbox/${relayed.outboxId}`)).html)
    expect(smtp).toContain('Source SMTP relay (sent as the app wrote it)')
    expect(smtp).toContain(
      'Submitted over SMTP: it is sent as the app wrote it, and its content is not shown.',
    )
  })
})
