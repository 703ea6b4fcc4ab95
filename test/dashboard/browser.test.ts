/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core), against the real
 * service, database, worker and TLS SMTP sinks: what an account's owner does, end to end.
 */
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { launchBrowser, type TestBrowser } from '../support/browser.ts'
import { accountWithPassword } from '../support/dashboard.ts'

const POLICY_REFUSAL = { code: 550, message: '5.7.1 Recipient address rejected' }
const app = useTestApp({}, { listen: true })
const PASSWORD = 'browser test password'
let browser: TestBrowser
let page: Page
/** Every address the browser asked for, including loads a page's policy then blocked. */
const requested: string[] = []
/**
 * Every address on another host that a request actually left the browser for: a load the
 * Content-Security-Policy blocks is announced as a request but never reaches the network.
 */
const leftForAnotherHost: string[] = []

beforeAll(async () => {
  browser = await launchBrowser()
  page = await browser.context.newPage()
  browser.context.on('request', (request) => requested.push(request.url()))
  await browser.context.route(
    (url) => !['data:', 'blob:', 'about:'].includes(url.protocol) && url.host !== new URL(app.url).host,
    (route) => {
      leftForAnotherHost.push(route.request().url())
      return route.abort('blockedbyclient')
    },
  )
}, 120_000)

afterAll(async () => {
  await browser?.close()
})

async function go(path: string) {
  await page.goto(`${app.url}${path}`)
}

async function flash(): Promise<string> {
  return (await page.locator('.flash').textContent()) ?? ''
}

describe('an account owner, in a browser', () => {
  let email: string
  let key: string

  it('signs in, and lands on the page asked for', async () => {
    email = (await accountWithPassword(app, PASSWORD, 'pro')).email
    await go('/dashboard/keys')
    expect(new URL(page.url()).pathname).toBe('/dashboard/login')
    await page.fill('input[name=email]', email)
    await page.fill('input[name=password]', PASSWORD)
    await page.click('button[type=submit]')
    await page.waitForURL(`${app.url}/dashboard/keys`)
    expect(await page.locator('h1').textContent()).toBe('API keys')
  })

  it('adds a connection, the login tested against the SMTP server, and sees a refused login’s reason', async () => {
    const sink = await app.sink({
      port: 2525,
      // Policy refusals, which suppress no one: a retry of the batch goes back to the server.
      behaviour: {
        recipientReplies: Object.fromEntries(
          ['refused1@example.com', 'refused2@example.com'].map((r) => [r, POLICY_REFUSAL]),
        ),
      },
    })
    await go('/dashboard/connections')
    const fill = async (password: string) => {
      await page.fill('input[name=host]', sink.host)
      await page.selectOption('select[name=port]', '2525')
      await page.fill('input[name=username]', sink.username)
      await page.fill('input[name=password]', password)
      await page.fill('input[name=from]', 'sender@example.com')
      await page.click('text=Test the login and add')
    }
    await fill('not the password')
    await expect
      .poll(() => page.locator('.refusal').textContent())
      .toContain('5.7.8 Authentication credentials invalid')
    await fill(sink.password)
    await page.waitForURL(`${app.url}/dashboard/connections`)
    expect(await flash()).toContain('Connection sender@example.com added')
    expect(await page.locator('table').textContent()).toContain('active')
  })

  it('creates a key, sees it once with a copy button, and not again', async () => {
    await go('/dashboard/keys')
    await page.fill('input[name=name]', 'browser key')
    await page.click('text=Create the key')
    key = await page.inputValue('#new-key')
    expect(key).toMatch(/^mr_[A-Za-z0-9_-]{43}$/)
    // Shown by the page's script once it has run (without it, there is nothing to click).
    await page.locator('[data-copy]').waitFor({ state: 'visible', timeout: 10_000 })
    await page.click('[data-copy]')
    // The clipboard answers asynchronously.
    await page.locator('[data-copy]', { hasText: 'Copied' }).waitFor({ timeout: 10_000 })
    await go('/dashboard/keys')
    expect(await page.content()).not.toContain(key)
    expect(await page.locator('table').textContent()).toContain(key.slice(0, 9))
  })

  for (const viewport of [
    { width: 390, height: 844 },
    { width: 1280, height: 900 },
  ]) {
    it(`changes a key's scope, rotates and revokes it with the mouse through its menu, ${viewport.width} px wide`, async () => {
      await page.setViewportSize(viewport)
      await go('/dashboard/keys')
      const name = `menu key ${viewport.width}`
      await page.click('summary >> text=Create a key')
      await page.fill('input[name=name]', name)
      await page.click('text=Create the key')
      const row = () => page.locator('tr', { hasText: name })
      // Every control is clicked where it is drawn: nothing may lie over it (no keyboard, no force).
      const click = (target: ReturnType<Page['locator']>) => target.click({ timeout: 5_000 })
      await click(row().locator('summary', { hasText: 'Change…' }))
      const scope = row().locator('select[name=connection]')
      await click(scope)
      await scope.selectOption({ label: 'sender@example.com' })
      await click(row().getByRole('button', { name: 'Change scope' }))
      expect(await flash()).toContain(`Key “${name}” now sends through one connection.`)
      expect(await row().textContent()).toContain('sender@example.com')

      await click(row().locator('summary', { hasText: 'Change…' }))
      await click(row().getByRole('link', { name: 'Rotate the secret…' }))
      expect(await page.locator('h1').textContent()).toBe(`Rotate the secret of “${name}”?`)
      await click(page.getByRole('button', { name: 'Rotate the secret' }))
      expect(await page.inputValue('#new-key')).toMatch(/^mr_/)

      await go('/dashboard/keys')
      await click(row().locator('summary', { hasText: 'Change…' }))
      await click(row().getByRole('link', { name: 'Revoke…' }))
      await click(page.getByRole('button', { name: 'Revoke the key' }))
      expect(await flash()).toContain(`Key “${name}” revoked`)
      expect(await row().textContent()).toContain('revoked')
      await page.setViewportSize({ width: 1280, height: 900 })
    })
  }

  it('sends through the API with it and finds the record in the outbox, and its detail page', async () => {
    const sent = await app.request('/send', {
      key,
      body: { to: 'ada@example.com', subject: 'Hello from the browser test', text_body: 'Hi Ada' },
    })
    expect(sent.status).toBe(200)
    const { outboxId } = (await sent.json()) as { outboxId: number }
    await go('/dashboard/outbox')
    await page.fill('input[name=q]', 'from the browser')
    await page.click('text=Filter')
    await page.click('text=Hello from the browser test')
    await page.waitForURL(`${app.url}/dashboard/outbox/${outboxId}`)
    const facts = (await page.locator('dl.facts').textContent()) ?? ''
    expect(facts).toContain('ada@example.com')
    expect(facts).toContain('sent')
    expect(facts).toContain('sender@example.com')
  })

  it('watches a batch with refused addresses make progress without a reload, then retries its failures', async () => {
    await app.worker()
    const created = await app.request('/send/batch', {
      key,
      body: {
        name: 'Browser batch',
        recipients: ['ok1@example.com', 'refused1@example.com', 'ok2@example.com', 'refused2@example.com'],
        template: { subject: 'Batch mail', text_body: 'Hello' },
      },
    })
    expect(created.status).toBe(200)
    const { batch_id: id } = (await created.json()) as { batch_id: number }
    let navigations = 0
    await go(`/dashboard/batches/${id}`)
    page.on('framenavigated', (frame) => {
      if (frame === page.mainFrame()) navigations++
    })
    await expect
      .poll(() => page.locator('section.progress').textContent(), { timeout: 20_000 })
      .toMatch(/completed[\s\S]*Sent\s*2[\s\S]*Failed\s*2/)
    expect(navigations).toBe(0)
    const failures = (await page.locator('section.progress table').textContent()) ?? ''
    expect(failures).toContain('refused1@example.com')
    expect(failures).toContain('5.7.1')
    // The server takes them now.
    app.sinks[0]?.setBehaviour({ recipientReplies: {} })
    await page.click('text=Retry the 2 failed')
    expect(await flash()).toContain('2 failed recipients queued again.')
    await expect
      .poll(() => page.locator('section.progress').textContent(), { timeout: 20_000 })
      .toMatch(/completed[\s\S]*Sent\s*4[\s\S]*Failed\s*0/)
  })

  it('adds audience members as text, with a problem per bad line', async () => {
    await go('/dashboard/audiences')
    await page.fill('input[name=name]', 'Browser audience')
    await page.click('form button[type=submit] >> text=Create')
    await page.click('a >> text=Browser audience')
    await page.fill(
      'textarea[name=lines]',
      'ann@example.com, name=Ann, VIP\nnot-an-address, x=1\nbob@example.com',
    )
    await page.click('form[action$="/members"] button[type=submit]')
    const refusal = (await page.locator('.refusal').textContent()) ?? ''
    expect(refusal).toContain('2 members added')
    expect(refusal).toContain('Line 2 (not-an-address, x=1): “not-an-address” is not an email address')
    expect(await page.inputValue('textarea[name=lines]')).toBe('not-an-address, x=1')
    const members = (await page.locator('table').textContent()) ?? ''
    expect(members).toContain('name=Ann, attr_1=VIP')
  })

  it('shows a message’s HTML, inline styles and all, in a sandboxed frame where its script runs nothing', async () => {
    const [row] = await app.services.sql<{ id: number }[]>`
      insert into outbox (account_id, connection_id, status, from_address, to_addresses, subject, message_id,
                          text_body, html_body)
      select a.id, null, 'failed', 'sender@example.com', '{eve@example.com}', 'Hostile', '<x@example.com>',
             'plain text', ${'<p id="p" style="color:#00aa55">Hi</p><script>parent.document.title="owned";document.getElementById("p").textContent="ran"</script><img src="https://tracker.example/pixel.gif" onerror="parent.document.title=\'owned\'">'}
      from accounts a where lower(a.email) = lower(${email})
      returning id`
    await go(`/dashboard/outbox/${row?.id}`)
    const frame = page.frameLocator('iframe.html-preview')
    expect(await frame.locator('#p').textContent()).toBe('Hi')
    // Emails are styled inline: the policy the frame inherits must let those styles apply.
    expect(await frame.locator('#p').evaluate((p) => getComputedStyle(p).color)).toBe('rgb(0, 170, 85)')
    expect(await page.title()).not.toContain('owned')
    expect(await page.locator('iframe.html-preview').getAttribute('sandbox')).toBe('')
  })

  it('loaded nothing from another host, /reference included', async () => {
    await go('/reference')
    await page.getByRole('heading', { name: 'Mailroom API' }).waitFor({ timeout: 30_000 })
    expect(leftForAnotherHost).toEqual([])
    expect(requested.some((url) => url.includes('/reference/scalar.js'))).toBe(true)
  })

  it('names the webhook endpoints apart from the webhook events in /reference’s sidebar', async () => {
    await go('/reference')
    const sidebar = page.getByRole('navigation')
    await sidebar.getByText('Email', { exact: true }).waitFor({ timeout: 30_000 })
    expect(await sidebar.getByText('Webhook endpoints', { exact: true }).count()).toBe(1)
    expect(await sidebar.getByText('Webhooks', { exact: true }).count()).toBe(1)
  })
})
