import { describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from '../support/app.ts'
import { signedIn, textOf } from '../support/dashboard.ts'
import { json } from '../support/dashboard-pages.ts'
import { startSink } from '../support/sending.ts'

const app = useTestApp()

describe('the outbox detail', () => {
  it('shows the bodies when kept and says when they were not', async () => {
    const { browser, account } = await signedIn(app)
    const insert = (text: string | null, html: string | null) =>
      app.services.sql<{ id: number }[]>`
        insert into outbox (account_id, status, from_address, to_addresses, cc_addresses, subject, message_id,
                            error, attempts, text_body, html_body)
        values (${account.id}, 'failed', 'me@example.com', '{to@example.com}', '{cc@example.com}', 'Subject here',
                '<id-1@example.com>', '550 5.1.1 <to@example.com>: User unknown', 2, ${text}, ${html})
        returning id`
    const [kept] = await insert('Hello in text', '<p>Hello in <b>HTML</b></p>')
    const [gone] = await insert(null, null)
    const page = await browser.get(`/dashboard/outbox/${kept?.id}`)
    const text = textOf(page.html)
    for (const fact of [
      'to@example.com',
      'cc@example.com',
      'Subject here',
      '<id-1@example.com>',
      '550 5.1.1',
      'Hello in text',
      // Tried before the server's answers were kept per recipient.
      'The server’s answer for each recipient was not recorded for this message.',
    ])
      expect(text).toContain(fact)
    // Headed by a policy of its own: nothing remote loads in the frame.
    expect(page.html).toMatch(
      /srcdoc="&lt;meta http-equiv=&quot;Content-Security-Policy&quot; content=&quot;default-src &#39;none&#39;; img-src data:;[^"]*&gt;&lt;p&gt;Hello in &lt;b&gt;HTML&lt;\/b&gt;&lt;\/p&gt;"/,
    )
    expect(textOf((await browser.get(`/dashboard/outbox/${gone?.id}`)).html)).toContain(
      'The content of this message was not kept.',
    )
  })
})

describe('the outbox detail, recipient by recipient', () => {
  it("shows what the server said for each recipient, and the history: submission, the attempt's reply, the failure's reason", async () => {
    const sink = await startSink(app, { rejectRecipients: ['refused@example.com'] })
    const owner = await seedAccount(app, { plan: 'pro', connection: { ...sink.login, rate: 6000 } })
    const sent = await json(
      await app.request('/send', {
        key: owner.key,
        body: { to: 'ok@example.com', cc: 'refused@example.com', subject: 'Partly', text_body: 'x' },
      }),
    )
    const { browser } = await signedIn(app, { account: owner.account })
    const page = await browser.get(`/dashboard/outbox/${sent.outboxId}`)
    const text = textOf(page.html)
    expect(text).toMatch(/Recipients Address Outcome The server's reply ok@example\.com accepted/)
    expect(text).toMatch(/refused@example\.com refused 550[\s\S]*History Event When Reply or reason/)
    const when = '\\d{4}-\\d\\d-\\d\\d [\\d:]+ UTC'
    expect(text).toMatch(
      new RegExp(
        `History Event When Reply or reason Submitted \\(sent at once\\) ${when} none ` +
          `Attempt 1: sent ${when} 250 [^]*Failed ${when} Delivered to 1 of 2 recipients; refused@example\\.com: 550`,
      ),
    )
    expect(text).toContain('Error')
  })

  it('says a queued message was not tried yet; its history is its queuing', async () => {
    const { browser, account } = await signedIn(app)
    const [queued] = await app.services.sql<{ id: number }[]>`
      insert into outbox (account_id, status, from_address, to_addresses, subject, message_id)
      values (${account.id}, 'queued', 'me@example.com', '{to@example.com}', 'Later', '<q@example.com>')
      returning id`
    const text = textOf((await browser.get(`/dashboard/outbox/${queued?.id}`)).html)
    expect(text).toContain('Recipients Not tried yet.')
    expect(text).toMatch(/History Event When Reply or reason Queued \d{4}-\d\d-\d\d [\d:]+ UTC none Content/)
    expect(text).not.toContain('Attempt 1')
  })
})
