/**
 * The interactive reference (/reference) in a real browser (Debian's Chromium through
 * playwright-core): Scalar reads the contract without complaint, tries requests against this
 * very service, and shows no bar of Scalar's own services (its console once reported the
 * browser's 404 for /favicon.ico, which is now the app's icon).
 */
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { launchBrowser, type TestBrowser } from '../support/browser.ts'

const app = useTestApp({}, { listen: true })
let browser: TestBrowser
let page: Page
/** What the page said on its console (warnings and errors), and scripts' uncaught errors. */
const complaints: string[] = []

beforeAll(async () => {
  browser = await launchBrowser()
  page = await browser.context.newPage()
  page.on('console', (message) => {
    if (message.type() === 'warning' || message.type() === 'error')
      complaints.push(`${message.type()}: ${message.text()} (${message.location().url})`)
  })
  page.on('pageerror', (error) => complaints.push(`uncaught: ${error.message}`))
}, 120_000)

afterAll(async () => {
  await browser?.close()
})

/** Opens the reference and waits until Scalar has read the contract and drawn it. */
async function openReference(hash = ''): Promise<void> {
  complaints.length = 0
  await page.goto(`${app.url}/reference${hash}`)
  await page.getByRole('heading', { name: 'Mailroom API' }).waitFor({ timeout: 30_000 })
  // The document is read and checked before anything of it is drawn.
  await page.getByRole('navigation').getByText('Email', { exact: true }).waitFor({ timeout: 30_000 })
}

describe('/reference in a browser', () => {
  it('reads the contract without a warning or an error on the console', async () => {
    await openReference()
    expect(complaints).toEqual([])
  })

  it('sends a tried request to this service, its base URL written out', async () => {
    await openReference('#tag/email/POST/send')
    await page.getByRole('button', { name: 'Test Request' }).first().click()
    // The client's address bar: this service's base URL, never the contract's variable.
    await expect.poll(() => page.locator('body').innerText()).toContain(`${app.url}/v1`)
    expect(await page.locator('body').innerText()).not.toContain('{base_url}')
  })

  it('shows no bar of Scalar’s own services (developer tools, configure, share, deploy)', async () => {
    await openReference()
    const body = await page.locator('body').innerText()
    for (const offer of ['Developer Tools', 'Configure', 'Share', 'Deploy']) expect(body).not.toContain(offer)
  })
})

describe('/favicon.ico', () => {
  it('is the app’s icon: what a browser asks for at the root, whichever page it shows', async () => {
    const icon = await app.requestRoot('/favicon.ico')
    expect(icon.status).toBe(200)
    expect(icon.headers.get('content-type')).toBe('image/x-icon')
    // An ICO file: reserved 0, type 1 (icon), at least one image.
    const bytes = new Uint8Array(await icon.arrayBuffer())
    expect([...bytes.slice(0, 4)]).toEqual([0, 0, 1, 0])
    expect(bytes[4]).toBeGreaterThan(0)
  })
})
