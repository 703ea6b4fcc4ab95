/**
 * Every dashboard page and hosted page in Chromium, on a phone (390 px) and a wide screen
 * (1280 px), filled with long and hostile values: no page scrolls sideways on the phone (a
 * table scrolls inside its own box, the column that leads on kept in view), addresses do not
 * break mid-word on the wide screen, and no page logs an error to the console.
 */
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSession } from '../../src/accounts/sessions.ts'
import { createAudience } from '../../src/audiences/audiences.ts'
import { createForm } from '../../src/forms/forms.ts'
import { setSignupPage } from '../../src/signups/signup-pages.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import { launchBrowser, sideways, type TestBrowser } from '../support/browser.ts'

const app = useTestApp({ allowPrivateWebhookUrls: true }, { listen: true })
const PHONE = { width: 390, height: 844 }
const WIDE = { width: 1280, height: 900 }
const SCRIPT = '<script>alert("x")</script>'
/** A 200-character name: markup, then one unbroken word. */
const NAME = `${SCRIPT} ${'Quarterly-newsletter-for-customers-'.repeat(6)}`.slice(0, 200)
const LONG = 'a-rather-long-mailbox-name-that-goes-on-and-on@subdomain.of.a.very-long-example-domain.example'
const SHORT = 'ann@example.com'
const SLUG = `signup-${'x'.repeat(57)}`

let browser: TestBrowser
let page: Page
const consoleErrors: string[] = []
let dashboardPages: string[] = []
let hostedPages: string[] = []

/** What the account holds: every list and page has long, hostile values to show. */
async function seed(): Promise<{ token: string }> {
  const sink = await app.sink({ port: 2525 })
  const owner = await seedAccount(app, {
    plan: 'pro',
    connection: { ...sink.login, from: LONG, quota: { quota: 500, per: 'day' } },
  })
  const accountId = owner.account.id
  const connectionId = owner.connection?.id as number
  const { sql } = app.services
  const api = async (path: string, body: unknown) => {
    const res = await app.request(path, { key: owner.key, body })
    expect([path, res.ok]).toEqual([path, true])
    return (await res.json()) as Record<string, unknown>
  }
  await sql`update api_keys set name = ${NAME}, connection_id = ${connectionId} where id = ${owner.keyId}`
  const [record] = await sql<{ id: number }[]>`
    insert into outbox (account_id, connection_id, status, from_address, to_addresses, cc_addresses, subject,
                        message_id, error, text_body, html_body)
    values (${accountId}, ${connectionId}, 'failed', ${LONG}, ${[LONG, SHORT]}, ${[SHORT]}, ${NAME},
            ${`<${'m'.repeat(60)}@example.com>`}, ${`550 5.1.1 ${LONG}: ${'no-such-user-'.repeat(10)}`},
            ${NAME}, ${`<p>${NAME}</p>`})
    returning id`
  const batch = await api('/send/batch', {
    name: NAME,
    recipients: [SHORT, LONG],
    template: { subject: NAME, text_body: 'Hello' },
  })
  const audience = await createAudience(sql, accountId, { name: NAME, description: NAME })
  await api(`/audiences/${audience.id}/members`, {
    members: [
      { email: SHORT, payload: { name: NAME, note: SCRIPT } },
      { email: LONG, payload: { long: 'v'.repeat(300) } },
    ],
  })
  const [member] = await sql<{ id: number }[]>`
    select id from audience_members where audience_id = ${audience.id} order by id limit 1`
  await setSignupPage(
    sql,
    accountId,
    audience.id,
    { slug: SLUG, title: NAME, description: NAME, connectionId },
    app.services.config.publicUrl,
  )
  const template = await api('/templates', { name: NAME, subject: NAME, text_body: NAME, html_body: NAME })
  const form = await createForm(
    sql,
    accountId,
    { name: NAME, redirectUrl: `https://${'r'.repeat(60)}.example/${'thanks/'.repeat(30)}` },
    app.services.config.publicUrl,
  )
  const hook = await api('/webhooks', {
    url: `http://127.0.0.1:9/${'hooks/'.repeat(40)}`,
    description: NAME,
    events: ['email.sent', 'email.failed'],
  })
  const ids = {
    connection: connectionId,
    key: owner.keyId,
    outbox: record?.id,
    batch: batch.batch_id,
    audience: audience.id,
    member: member?.id,
    template: (template.template as { id: number }).id,
    form: form.id,
    webhook: (hook.webhook as { id: number }).id,
  }
  ;({ dashboardPages, hostedPages } = pagesOf(ids, form.public_id))
  return startSession(sql, accountId)
}

/** The dashboard's pages and the hosted pages of what `seed` made. */
function pagesOf(ids: Record<string, unknown>, formPublicId: string) {
  const dashboard = [
    '/dashboard',
    '/dashboard/connections',
    `/dashboard/connections/${ids.connection}`,
    `/dashboard/connections/${ids.connection}/delete`,
    '/dashboard/keys',
    `/dashboard/keys/${ids.key}/rotate`,
    `/dashboard/keys/${ids.key}/revoke`,
    '/dashboard/outbox',
    `/dashboard/outbox/${ids.outbox}`,
    '/dashboard/batches',
    `/dashboard/batches/${ids.batch}`,
    '/dashboard/audiences',
    `/dashboard/audiences/${ids.audience}`,
    `/dashboard/audiences/${ids.audience}/members/${ids.member}/delete`,
    '/dashboard/templates',
    `/dashboard/templates/${ids.template}`,
    '/dashboard/forms',
    `/dashboard/forms/${ids.form}`,
    '/dashboard/webhooks',
    `/dashboard/webhooks/${ids.webhook}`,
    `/dashboard/webhooks/${ids.webhook}/rotate`,
    `/dashboard/webhooks/${ids.webhook}/delete`,
    '/dashboard/account',
    '/dashboard/no-such-page',
  ]
  const hosted = [
    `/signup/${SLUG}`,
    `/forms/${formPublicId}`,
    `/signup/confirm/${'x'.repeat(43)}`,
    `/unsubscribe/${'x'.repeat(80)}`,
  ]
  return { dashboardPages: dashboard, hostedPages: hosted }
}

beforeAll(async () => {
  const { token } = await seed()
  browser = await launchBrowser(PHONE)
  await browser.context.addCookies([{ name: 'mailroom_session', value: token, url: app.url }])
  page = await browser.context.newPage()
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(`${page.url()}: ${message.text()}`)
  })
}, 120_000)

afterAll(async () => {
  await browser?.close()
})

async function visit(path: string) {
  const response = await page.goto(`${app.url}${path}`)
  expect([path, (response?.status() ?? 500) < 500]).toEqual([path, true])
}

/**
 * Addresses the page breaks mid-word: a line of them starts other than after a hyphen (where
 * browsers may break a line).
 */
function brokenAddresses(): Promise<string[]> {
  return page.evaluate(() => {
    const broken: string[] = []
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT)
    const top = (node: Node, at: number) => {
      const range = document.createRange()
      range.setStart(node, at)
      range.setEnd(node, at + 1)
      return Math.round(range.getBoundingClientRect().top)
    }
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of (node.textContent ?? '').matchAll(/[\w.+-]+@[\w-]+(\.[\w-]+)+/g)) {
        for (let i = match.index + 1; i < match.index + match[0].length; i++) {
          if (top(node, i) > top(node, i - 1) && node.textContent?.[i - 1] !== '-') broken.push(match[0])
        }
      }
    }
    return broken
  })
}

describe('on a phone (390 px)', () => {
  it('no dashboard page scrolls sideways', async () => {
    await page.setViewportSize(PHONE)
    const wide: string[] = []
    for (const path of dashboardPages) {
      await visit(path)
      const over = await sideways(page)
      if (over > 0) wide.push(`${path}: ${over} px`)
    }
    expect(wide).toEqual([])
  })

  it('no hosted page scrolls sideways, the sign-up page refusing a bad address included', async () => {
    await page.setViewportSize(PHONE)
    const wide: string[] = []
    for (const path of hostedPages) {
      await visit(path)
      const over = await sideways(page)
      if (over > 0) wide.push(`${path}: ${over} px`)
    }
    await visit(`/signup/${SLUG}`)
    await page.fill('input[name=email]', `${'b'.repeat(60)}@@example.com`)
    await page.locator('form').evaluate((form: HTMLFormElement) => {
      form.noValidate = true
    })
    await page.click('button[type=submit]')
    await page.locator('#email-problem').waitFor()
    expect(await sideways(page)).toBeLessThanOrEqual(0)
    expect(wide).toEqual([])
  })

  it('the sign-in page does not scroll sideways, a refused sign-in with a long address included', async () => {
    const signedOut = await launchBrowser(PHONE)
    try {
      const login = await signedOut.context.newPage()
      await login.goto(`${app.url}/dashboard/login?next=/dashboard/${'x'.repeat(300)}`)
      const over = () => login.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
      expect(await over()).toBeLessThanOrEqual(0)
      await login.fill('input[name=email]', LONG)
      await login.fill('input[name=password]', 'not the password at all')
      await login.click('button[type=submit]')
      await login.locator('.refusal').waitFor()
      expect(await over()).toBeLessThanOrEqual(0)
    } finally {
      await signedOut.close()
    }
  })

  it('keeps the outbox’s subject link, the way into a message, in view, the table scrolled or not', async () => {
    await page.setViewportSize(PHONE)
    await visit('/dashboard/outbox')
    const link = page.locator('table a').first()
    const inView = async () => {
      const box = await link.boundingBox()
      expect(box).not.toBeNull()
      expect(box?.x).toBeGreaterThanOrEqual(0)
      expect((box?.x ?? 0) + (box?.width ?? 0)).toBeLessThanOrEqual(PHONE.width)
    }
    await inView()
    const scrolled = await page
      .locator('.overflow-auto')
      .first()
      .evaluate((box) => {
        box.scrollLeft = box.scrollWidth
        return box.scrollLeft
      })
    expect(scrolled).toBeGreaterThan(0)
    await inView()
    await link.click({ timeout: 5_000 })
    await page.waitForURL(/\/dashboard\/outbox\/[0-9]+$/)
  })

  it('shows the overview’s quota table whole', async () => {
    await page.setViewportSize(PHONE)
    await visit('/dashboard')
    const box = page.locator('section', { hasText: 'Connection quotas' }).locator('.overflow-auto')
    expect(await box.evaluate((element) => element.scrollWidth - element.clientWidth)).toBeLessThanOrEqual(0)
    expect(await box.textContent()).toContain('0 of 500 per day')
  })
})

describe('on a wide screen (1280 px)', () => {
  it('addresses do not break mid-word on any page', async () => {
    await page.setViewportSize(WIDE)
    const broken: string[] = []
    for (const path of [...dashboardPages, ...hostedPages]) {
      await visit(path)
      for (const address of await brokenAddresses()) broken.push(`${path}: ${address}`)
    }
    expect(broken).toEqual([])
  })
})

describe('every page', () => {
  it('logs no error to the console', async () => {
    for (const path of [...dashboardPages, ...hostedPages]) await visit(path)
    const unforeseen = consoleErrors.filter(
      (line) =>
        // What the browser says of answers the tests ask for (a 404, a refusal) and of the
        // message preview's sandbox stopping a hostile email's script: each as it should be.
        !/Failed to load resource: the server responded with a status of 4/.test(line) &&
        !/Blocked script execution in 'about:srcdoc'/.test(line),
    )
    expect(unforeseen).toEqual([])
  })
})
