/**
 * The hosted pages in a real browser (Chromium through playwright-core), against the real
 * service, database, worker and TLS SMTP sink: subscribing, double opt-in from the emailed
 * link, unsubscribing from a batch email's link, and a form pasted into another site.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAudience } from '../../src/audiences/audiences.ts'
import { addConnection } from '../../src/connections/connections.ts'
import { createForm } from '../../src/forms/forms.ts'
import { createKey } from '../../src/keys/keys.ts'
import { setSignupPage } from '../../src/signups/signup-pages.ts'
import { useTestApp } from '../support/app.ts'
import { decodeMessage } from '../support/batches.ts'
import { launchBrowser, type TestBrowser } from '../support/browser.ts'
import { accountWithPassword } from '../support/dashboard.ts'
import type { SmtpSink } from '../support/smtp-sink.ts'

const app = useTestApp({}, { listen: true })
const PASSWORD = 'hosted browser password'
let browser: TestBrowser
let page: Page
let sink: SmtpSink
let accountId: number
let from: string
/** Another site, on another origin, where the form's snippet is pasted. */
let site: Server
let siteOrigin: string
let sitePage = ''
/** What Chromium logged as errors (an invalid `pattern` among them). */
const consoleErrors: string[] = []

beforeAll(async () => {
  browser = await launchBrowser()
  page = await browser.context.newPage()
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text())
  })
  sink = await app.sink({ port: 2525 })
  const account = await accountWithPassword(app, PASSWORD, 'pro')
  accountId = account.id
  from = `hosted-owner-${process.pid}@example.com`
  await addConnection(app.services, { accountId, ...sink.login, from, rate: 6000 })
  await app.worker()
  site = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(req.url === '/thanks' ? '<h1>Thanks from the site</h1>' : sitePage)
  })
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
  // localhost, not 127.0.0.1: another origin than the service's.
  siteOrigin = `http://localhost:${(site.address() as AddressInfo).port}`
  await page.goto(`${app.url}/dashboard/login`)
  await page.fill('input[name=email]', account.email)
  await page.fill('input[name=password]', PASSWORD)
  await page.click('button[type=submit]')
  await page.waitForURL(`${app.url}/dashboard`)
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await new Promise((resolve) => site?.close(resolve))
})

/** A link of an email (made under the test's public URL) on the listening service. */
function onService(link: string): string {
  const url = new URL(link)
  return `${app.url}${url.pathname}`
}

async function mailTo(address: string) {
  const found = () => sink.messages.find((m) => m.envelope.to.includes(address))
  await expect.poll(found, { timeout: 15_000 }).toBeDefined()
  return found() as NonNullable<ReturnType<typeof found>>
}

describe('the public, in a browser', () => {
  it('subscribes through a hosted page set up in the dashboard, and the owner sees the member', async () => {
    const audience = await createAudience(app.services.sql, accountId, { name: 'Browser readers' })
    await page.goto(`${app.url}/dashboard/audiences/${audience.id}`)
    await page.fill('input[name=slug]', 'browser-readers')
    await page.fill('input[name=title]', 'Browser readers')
    await page.click('text=Create the page')
    expect(await page.locator('.flash').textContent()).toContain('Sign-up page saved')
    const url = await page.inputValue('#signup-url')
    await page.goto(onService(url))
    expect(await page.locator('h1').textContent()).toBe('Browser readers')
    // The browser's own check lets it through; the service's does not.
    await page.fill('input[name=email]', 'reader..x@example.com')
    await page.click('button[type=submit]')
    const field = page.locator('input[name=email]')
    expect(await field.getAttribute('aria-invalid')).toBe('true')
    expect(await page.locator('#email-problem').textContent()).toBe('Enter a valid email address')
    expect(await field.inputValue()).toBe('reader..x@example.com')
    await field.fill('reader@example.com')
    await page.click('button[type=submit]')
    expect(await page.locator('[role=status]').textContent()).toBe('Thank you: you are subscribed.')
    await page.goto(`${app.url}/dashboard/audiences/${audience.id}`)
    expect(await page.locator('table').textContent()).toContain('reader@example.com')
    expect(await page.locator('#signup-page').textContent()).toContain('1 sign-up through it')
  })

  it('subscribes with double opt-in, confirming from the link in the email', async () => {
    const audience = await createAudience(app.services.sql, accountId, { name: 'Confirmed' })
    const set = await setSignupPage(
      app.services.sql,
      accountId,
      audience.id,
      { slug: 'browser-optin', doubleOptIn: true },
      'http://x',
    )
    await page.goto(onService(set.url))
    await page.fill('input[name=email]', 'optin@example.com')
    await page.click('button[type=submit]')
    expect(await page.locator('[role=status]').textContent()).toContain(
      'Check your inbox: you are subscribed once you follow the link in the email we sent.',
    )
    const mail = await mailTo('optin@example.com')
    const link = /http:\/\/localhost(\/signup\/confirm\/[A-Za-z0-9_-]{43})/.exec(
      decodeMessage(mail.raw).text ?? '',
    )?.[1]
    expect(link).toBeDefined()
    await page.goto(`${app.url}${link}`)
    await page.goto(`${app.url}/dashboard/audiences/${audience.id}`)
    expect(await page.locator('body').textContent()).toContain('No member yet')
    await page.goto(`${app.url}${link}`)
    await page.click('text=Confirm my subscription')
    expect(await page.locator('[role=status]').textContent()).toContain('You are subscribed')
    await page.goto(`${app.url}/dashboard/audiences/${audience.id}`)
    expect(await page.locator('table').textContent()).toContain('optin@example.com')
  })

  it('unsubscribes through the link of a batch email, and the member is gone', async () => {
    const audience = await createAudience(app.services.sql, accountId, { name: 'Leaving' })
    const { key } = await createKey(app.services.sql, { accountId, name: 'batch key' })
    await app.request(`/audiences/${audience.id}/members`, {
      method: 'POST',
      key,
      body: { members: [{ email: 'leaver@example.com' }, { email: 'stayer@example.com' }] },
    })
    const batch = await app.request('/send/batch', {
      method: 'POST',
      key,
      body: {
        audience_id: audience.id,
        template: { subject: 'News', html_body: '<a href="{{unsubscribe_url}}">Unsubscribe</a>' },
      },
    })
    expect(batch.status).toBe(200)
    const mail = await mailTo('leaver@example.com')
    const header = mail.headers.get('list-unsubscribe') ?? ''
    const link = /^<(.+)>$/.exec(header)?.[1] as string
    expect(decodeMessage(mail.raw).html).toContain(link)
    await page.goto(onService(link))
    await page.click('button[type=submit]')
    expect(await page.locator('[role=status]').textContent()).toContain('unsubscribed')
    await page.goto(`${app.url}/dashboard/audiences/${audience.id}`)
    const members = (await page.locator('table').textContent()) ?? ''
    expect(members).not.toContain('leaver@example.com')
    expect(members).toContain('stayer@example.com')
  })

  it('submits a form pasted into another site; the owner gets the email and finds it in the outbox', async () => {
    const form = await createForm(
      app.services.sql,
      accountId,
      { name: 'Site contact', redirectUrl: `${siteOrigin}/thanks`, allowedOrigins: [siteOrigin] },
      'http://x',
    )
    await page.goto(`${app.url}/dashboard/forms/${form.id}`)
    const snippet = await page.inputValue('#form-snippet')
    sitePage = `<!doctype html><title>Site</title>${snippet.replace(/action="[^"]*"/, `action="${app.url}/forms/${form.public_id}"`)}`
    await page.goto(`${siteOrigin}/`)
    await page.fill('input[name=name]', 'Visitor <script>alert(1)</script>')
    await page.fill('input[name=email]', 'visitor@example.com')
    await page.fill('textarea[name=message]', 'Hello from the site')
    await page.click('button[type=submit]')
    await page.waitForURL(`${siteOrigin}/thanks`)
    const mail = await mailTo(from)
    expect(mail.headers.get('subject')).toBe('New submission: Site contact')
    expect(mail.headers.get('reply-to')).toBe('visitor@example.com')
    const decoded = decodeMessage(mail.raw)
    expect(decoded.html).toContain('Visitor &lt;script&gt;')
    expect(decoded.text).toContain('message: Hello from the site')
    await page.goto(`${app.url}/dashboard/outbox`)
    expect(await page.locator('table').textContent()).toContain('New submission: Site contact')
    await page.goto(`${app.url}/dashboard/forms`)
    expect(await page.locator('table').textContent()).toContain('Site contact')
  })

  it('logged no error to the console on the way, the sign-up page’s settings and the pages themselves included', () => {
    expect(
      consoleErrors.filter(
        (line) => !/Failed to load resource: the server responded with a status of 4/.test(line),
      ),
    ).toEqual([])
  })
})
