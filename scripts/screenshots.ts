/**
 * Screenshots of the dashboard's main pages, narrow (a phone) and wide, with long and hostile
 * values, for the README: `npm run screenshots` writes them to docs/screenshots/. It runs under
 * vitest for the test fixture (database, TLS SMTP sink, worker); it asserts nothing.
 */
import { mkdir } from 'node:fs/promises'
import type { Page } from 'playwright-core'
import { it } from 'vitest'
import { useTestApp } from '../test/support/app.ts'
import { launchBrowser } from '../test/support/browser.ts'
import { accountWithPassword } from '../test/support/dashboard.ts'
import type { SmtpSink } from '../test/support/smtp-sink.ts'
import { startWebhookReceiver } from '../test/support/webhook-receiver.ts'

const app = useTestApp({}, { listen: true })
const OUT = 'docs/screenshots'
const PASSWORD = 'screenshot password'
const LONG = 'a-rather-long-mailbox-name-that-goes-on-and-on@subdomain.of.a.very-long-example-domain.example'
const HOSTILE = '<script>alert("hi")</script> & "quotes"'

it('takes the screenshots', async () => {
  await mkdir(OUT, { recursive: true })
  const sink = await app.sink({ port: 2525, behaviour: { rejectRecipients: ['nobody@example.com', LONG] } })
  const account = await accountWithPassword(app, PASSWORD, 'pro')
  const browser = await launchBrowser()
  const page = await browser.context.newPage()
  const go = (path: string) => page.goto(`${app.url}${path}`)
  const key = await signInAndAddConnection(page, go, account.email, sink)
  const { receiver, webhook, batchId } = await sendTraffic(key)
  await new Promise((resolve) => setTimeout(resolve, 3000))
  const htmlId = await recordHtmlEmail(account.id)
  const { audiencePath, templatePath } = await createAudienceAndTemplate(page, go)

  const shots: [string, string][] = [
    ['overview', '/dashboard'],
    ['connections', '/dashboard/connections'],
    ['keys', '/dashboard/keys'],
    ['outbox', '/dashboard/outbox'],
    ['outbox-detail', `/dashboard/outbox/${htmlId}`],
    ['batch', `/dashboard/batches/${batchId}`],
    ['audience', audiencePath],
    ['template', templatePath],
    ['webhook', `/dashboard/webhooks/${webhook.id}`],
    ['suppressions', '/dashboard/suppressions'],
  ]
  await shoot(page, go, shots)
  const signedOut = await browser.context.browser()?.newContext()
  const login = signedOut ? await signedOut.newPage() : await browser.context.newPage()
  await login.setViewportSize({ width: 1280, height: 800 })
  await login.goto(`${app.url}/dashboard/login`)
  await login.screenshot({ path: `${OUT}/sign-in-wide.png`, fullPage: true })
  await browser.close()
  await receiver.close()
})

type Go = (path: string) => Promise<unknown>

/** Signs in as `email`, adds a connection to `sink` and creates a key; the key. */
async function signInAndAddConnection(page: Page, go: Go, email: string, sink: SmtpSink): Promise<string> {
  await go('/dashboard/login')
  await page.fill('input[name=email]', email)
  await page.fill('input[name=password]', PASSWORD)
  await page.click('button[type=submit]')
  await go('/dashboard/connections')
  await page.fill('input[name=host]', sink.host)
  await page.selectOption('select[name=port]', '2525')
  await page.fill('input[name=username]', sink.username)
  await page.fill('input[name=password]', sink.password)
  await page.fill('input[name=from]', 'newsletter@example.com')
  await page.fill('input[name=quota]', '500')
  await page.click('text=Test the login and add')
  await go('/dashboard/keys')
  await page.fill('input[name=name]', `Production ${HOSTILE}`)
  await page.click('text=Create the key')
  return page.inputValue('#new-key')
}

/** A webhook endpoint for every event, three sends and a batch, as the key's account. */
async function sendTraffic(key: string) {
  // An endpoint for every event: the sends below leave it deliveries, one of them refused once.
  const receiver = await startWebhookReceiver((n) => (n === 2 ? 500 : 200))
  const hook = await app.request('/webhooks', {
    key,
    body: {
      url: `${receiver.url}/mailroom/events`,
      description: 'Order system',
      events: ['email.sent', 'email.failed', 'batch.completed', 'batch.failed'],
    },
  })
  const { webhook } = (await hook.json()) as { webhook: { id: number } }
  await app.worker()
  for (const [to, subject] of [
    ['ada@example.com', 'Your receipt for order 4711'],
    [LONG, `A subject that is much longer than anyone would write, to see how it wraps ${HOSTILE}`],
    ['grace@example.com', 'Welcome aboard'],
  ]) {
    await app.request('/send', { key, body: { to, subject, text_body: 'Hello', html_body: '<p>Hello</p>' } })
  }
  const batch = await app.request('/send/batch', {
    key,
    body: {
      name: `Spring newsletter ${HOSTILE}`,
      recipients: ['ann@example.com', 'bob@example.com', 'nobody@example.com', LONG],
      template: { subject: 'Spring news', text_body: 'Hi' },
    },
  })
  const { batch_id: batchId } = (await batch.json()) as { batch_id: number }
  return { receiver, webhook, batchId }
}

/** An email with an HTML body and two attempts, recorded as a real queued send records it. */
async function recordHtmlEmail(accountId: number): Promise<number> {
  const [html] = await app.services.sql<{ id: number }[]>`
    insert into outbox (account_id, connection_id, status, from_address, to_addresses, subject, message_id, attempts,
                        text_body, html_body, created_at, sent_at)
    select ${accountId}, c.id, 'sent', c.from_address, '{ada@example.com}', 'Your invoice', '<inv-1@example.com>', 2,
           'Hello Ada, your invoice is attached.', ${'<h1 style="color:#0a5">Invoice</h1><p>Hello <b>Ada</b>, your invoice is attached.</p><script>alert(1)</script>'},
           now() - interval '2 minutes', now()
    from connections c where c.account_id = ${accountId}
    returning id`
  // What the server said, as a real queued send records it: deferred once, then taken.
  const deferred = [
    { address: 'ada@example.com', status: 'deferred', reply: '450 4.2.1 Mailbox busy, try again later' },
  ]
  const accepted = [{ address: 'ada@example.com', status: 'accepted', reply: null }]
  const { sql } = app.services
  await sql`
    with record as (update outbox set recipients = ${sql.json(accepted)} where id = ${html?.id ?? 0})
    insert into outbox_attempts (outbox_id, attempt, at, outcome, reply, recipients)
    values (${html?.id ?? 0}, 1, now() - interval '118 seconds', 'deferred', '450 4.2.1 Mailbox busy, try again later',
            ${sql.json(deferred)}),
           (${html?.id ?? 0}, 2, now(), 'delivered', '250 2.0.0 Ok: queued as 4F2A1', ${sql.json(accepted)})`
  return html?.id ?? 0
}

/** An audience with members and a template, made through the dashboard; the pages of each. */
async function createAudienceAndTemplate(page: Page, go: Go) {
  await go('/dashboard/audiences')
  await page.fill('input[name=name]', 'Customers')
  await page.fill('textarea[name=description]', 'Everyone with an active subscription')
  await page.click('form button[type=submit] >> text=Create')
  await page.click('a >> text=Customers')
  const audiencePath = new URL(page.url()).pathname
  await page.fill(
    'textarea[name=lines]',
    `ann@example.com, name=Ann, VIP\nbob@example.com, name=Bob, plan=pro\n${LONG}, note=${HOSTILE}\nnot an address`,
  )
  await page.click('form[action$="/members"] button[type=submit]')
  await go('/dashboard/templates')
  await page.fill('input[name=name]', 'Renewal reminder')
  await page.fill('input[name=subject]', 'Your plan renews soon, {{name}}')
  await page.fill('textarea[name=text_body]', 'Hi {{name}}, your {{plan}} plan renews next week.')
  await page.fill(
    'textarea[name=html_body]',
    '<p>Hi <b>{{name}}</b>, your {{plan}} plan renews next week.</p>',
  )
  await page.click('form button[type=submit] >> text=Create')
  await page.click('a >> text=Renewal reminder')
  const templatePath = new URL(page.url()).pathname
  return { audiencePath, templatePath }
}

/** Each of `shots` wide and narrow. */
async function shoot(page: Page, go: Go, shots: [string, string][]) {
  for (const [width, height, suffix] of [
    [1280, 900, 'wide'],
    [390, 844, 'narrow'],
  ] as const) {
    await page.setViewportSize({ width, height })
    for (const [name, path] of shots) {
      await go(path)
      if ((await page.locator('iframe.html-preview').count()) > 0) {
        // An email's or a template's HTML renders in its frame after the page itself, and
        // headless Chromium paints a sandboxed frame (a process of its own) only inside the
        // viewport: a full-page shot left it blank below the fold. The viewport takes the whole
        // page for these.
        const whole = await page.evaluate(() => document.documentElement.scrollHeight)
        await page.setViewportSize({ width, height: whole })
        await page.frameLocator('iframe.html-preview').locator('p').first().waitFor()
      }
      await page.screenshot({ path: `${OUT}/${name}-${suffix}.png`, fullPage: true })
      await page.setViewportSize({ width, height })
    }
  }
}
