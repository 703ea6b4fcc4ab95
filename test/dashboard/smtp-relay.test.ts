/**
 * The dashboard's "Sending over SMTP" page in Chromium: the public host, both ports, the
 * username and the key to use, and ready settings for WordPress, Django, Rails and Nodemailer,
 * without JavaScript; on a phone (390 px) and a wide screen (1280 px), a host name as long as
 * they come scrolls nothing sideways.
 */
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { seedAccount, testRelay, useTestApp } from '../support/app.ts'
import { sideways, signedInPage, type TestBrowser, VIEWPORTS } from '../support/browser.ts'

/** A host name of 253 characters, the longest there is. */
const LONG_HOST = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(50)}.example`
const FROM = 'news@shop.example.com'

const app = useTestApp(
  {
    publicUrl: `https://${LONG_HOST}`,
    relay: testRelay({ port: 2587, securePort: 2465 }),
  },
  { listen: true },
)

let browser: TestBrowser
let page: Page

beforeAll(async () => {
  const sink = await app.sink({ port: 2525 })
  const owner = await seedAccount(app, { plan: 'pro', connection: { ...sink.login, from: FROM } })
  ;({ browser, page } = await signedInPage(app, owner.account.id))
}, 120_000)

afterAll(async () => {
  await browser?.close()
})

const snippet = (id: string) => page.locator(`#smtp-${id}`).inputValue()

describe('the "Sending over SMTP" page', () => {
  it('is in the navigation and gives the public host, both ports, the username and which key to use', async () => {
    await page.goto(`${app.url}/dashboard`)
    await page.getByRole('link', { name: 'SMTP relay' }).click()
    await expect(page.locator('h1').textContent()).resolves.toBe('Sending over SMTP')
    expect(await page.locator('#smtp-host').inputValue()).toBe(LONG_HOST)
    expect(await page.locator('#smtp-username').inputValue()).toBe('mailroom')
    const text = await page.locator('main').innerText()
    expect(text).toContain('Port 2587 with STARTTLS, or port 2465 with implicit TLS')
    expect(text).toContain('Password: an API key.')
    expect(
      await page.getByRole('link', { name: 'Create one on the API keys page' }).getAttribute('href'),
    ).toBe('/dashboard/keys')
    expect(text).toContain('A key scoped to one connection sends from that connection')
    expect(text).toContain('self-signed certificate')
  })

  it("gives WordPress, Django, Rails and Nodemailer settings with the host, the STARTTLS port and the account's sender", async () => {
    await page.goto(`${app.url}/dashboard/smtp`)
    const wordpress = await snippet('wordpress')
    expect(wordpress).toContain(`define( 'WPMS_SMTP_HOST', '${LONG_HOST}' );`)
    expect(wordpress).toContain("define( 'WPMS_SMTP_PORT', 2587 );")
    expect(wordpress).toContain("define( 'WPMS_SSL', 'tls' );")
    expect(wordpress).toContain("define( 'WPMS_SMTP_USER', 'mailroom' );")
    expect(wordpress).toContain(`define( 'WPMS_MAIL_FROM', '${FROM}' );`)
    const django = await snippet('django')
    for (const line of [`EMAIL_HOST = "${LONG_HOST}"`, 'EMAIL_PORT = 2587', 'EMAIL_USE_TLS = True']) {
      expect(django).toContain(line)
    }
    expect(django).toContain('EMAIL_HOST_USER = "mailroom"')
    const rails = await snippet('rails')
    expect(rails).toContain('config.action_mailer.smtp_settings = {')
    expect(rails).toContain(`address: "${LONG_HOST}",`)
    expect(rails).toContain('enable_starttls: true,')
    const nodemailer = await snippet('nodemailer')
    expect(nodemailer).toContain('nodemailer.createTransport({')
    expect(nodemailer).toContain(`host: '${LONG_HOST}',`)
    expect(nodemailer).toContain("auth: { user: 'mailroom', pass: process.env.MAILROOM_API_KEY },")
    expect(nodemailer).toContain(`from: '${FROM}',`)
  })

  it('needs no JavaScript: the settings are in the page as served', async () => {
    const res = await page.request.get(`${app.url}/dashboard/smtp`)
    const html = await res.text()
    expect(html).toContain(`value="${LONG_HOST}"`)
    expect(html).toContain('EMAIL_PORT = 2587')
  })

  it('uses implicit TLS when STARTTLS is off, and says when both are off', async () => {
    const relay = app.services.config.relay
    const saved = { port: relay.port, securePort: relay.securePort }
    try {
      relay.port = null
      await page.goto(`${app.url}/dashboard/smtp`)
      expect(await page.locator('main').innerText()).toContain('Port off with STARTTLS, or port 2465')
      expect(await snippet('django')).toContain('EMAIL_USE_SSL = True')
      expect(await snippet('nodemailer')).toContain('secure: true,')
      relay.securePort = null
      await page.goto(`${app.url}/dashboard/smtp`)
      expect(await page.locator('main').innerText()).toContain("Both of the relay's listeners are off")
      expect(await page.locator('textarea').count()).toBe(0)
    } finally {
      Object.assign(relay, saved)
    }
  })
})

for (const viewport of VIEWPORTS) {
  describe(`the "Sending over SMTP" page, ${viewport.width} px wide`, () => {
    it('scrolls nothing sideways: the long host stays inside its field, code wraps inside its box', async () => {
      await page.setViewportSize(viewport)
      await page.goto(`${app.url}/dashboard/smtp`)
      expect(await sideways(page)).toBeLessThanOrEqual(0)
      const boxes = page.locator('main input, main textarea')
      expect(await boxes.count()).toBe(6)
      for (const box of await boxes.all()) {
        const bounds = await box.boundingBox()
        expect(bounds).not.toBeNull()
        expect((bounds?.x ?? -1) >= 0 && (bounds?.x ?? 0) + (bounds?.width ?? 0) <= viewport.width).toBe(true)
      }
      for (const code of await page.locator('main textarea').all()) {
        expect(
          await code.evaluate((element) => element.scrollWidth - element.clientWidth),
        ).toBeLessThanOrEqual(0)
      }
    })
  })
}
