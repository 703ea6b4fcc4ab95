/**
 * The suppressions page in Chromium, on a phone (390 px) and a wide screen (1280 px), with the
 * longest address there is and a hostile server reply: nothing scrolls sideways, nothing runs,
 * and an owner adds, finds and removes an address with the mouse, without the page's script.
 */
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addSuppressions } from '../../src/db/suppressions.ts'
import { suppressionStrength } from '../../src/suppressions/strength.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import { sideways, signedInPage, type TestBrowser, VIEWPORTS } from '../support/browser.ts'

const app = useTestApp({}, { listen: true })
/** 254 characters, the longest address the API takes: a 64-character local part, long labels. */
const LONGEST = `${'l'.repeat(64)}@${'d'.repeat(63)}.${'e'.repeat(63)}.${'f'.repeat(57)}.com`
const SCRIPT = '<script>window.ran = true</script>'
const DETAIL = `550 5.1.1 ${SCRIPT} ${'no-such-mailbox-here-'.repeat(12)}`

let browser: TestBrowser
let page: Page
const dialogs: string[] = []
const consoleErrors: string[] = []

beforeAll(async () => {
  const owner = await seedAccount(app)
  const strength = suppressionStrength({ reason: 'hard_bounce', scope: 'all' })
  await addSuppressions(
    app.services.sql,
    owner.account.id,
    [LONGEST, 'short@example.com'].map((email) => ({
      email,
      reason: 'hard_bounce' as const,
      scope: 'all' as const,
      strength,
      detail: DETAIL,
      sourceType: 'email' as const,
      sourceId: 12,
    })),
  )
  // The dashboard works without its script; this page is used so.
  ;({ browser, page } = await signedInPage(app, owner.account.id))
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message())
    void dialog.dismiss()
  })
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(`${page.url()}: ${message.text()}`)
  })
}, 120_000)

afterAll(async () => {
  await browser?.close()
})

/** Clicked where it is drawn: nothing may lie over it. */
function click(target: ReturnType<Page['locator']>) {
  return target.click({ timeout: 5_000 })
}

for (const viewport of VIEWPORTS) {
  describe(`${viewport.width} px wide`, () => {
    it('shows the list, a refused addition and the confirmation without scrolling sideways or running the detail', async () => {
      await page.setViewportSize(viewport)
      await page.goto(`${app.url}/dashboard/suppressions`)
      expect(await page.locator('table').textContent()).toContain(LONGEST)
      expect(await page.locator('table').textContent()).toContain(SCRIPT)
      expect(await sideways(page)).toBeLessThanOrEqual(0)

      await page.fill('textarea[name=addresses]', `${LONGEST}x\n${SCRIPT}`)
      await click(page.getByRole('button', { name: 'Suppress' }))
      await page.locator('.refusal').waitFor()
      expect(await page.locator('.refusal').textContent()).toContain('line 2:')
      expect(await sideways(page)).toBeLessThanOrEqual(0)

      await page.goto(`${app.url}/dashboard/suppressions?q=${'l'.repeat(64)}`)
      await click(page.locator('tr', { hasText: LONGEST }).getByRole('link', { name: 'Remove…' }))
      expect(await page.locator('h1').textContent()).toBe(`Remove ${LONGEST} from the suppression list?`)
      expect(await sideways(page)).toBeLessThanOrEqual(0)
      expect(await page.evaluate(() => (window as { ran?: boolean }).ran)).toBeUndefined()
      expect(dialogs).toEqual([])
    })

    it('adds an address, finds it by the start of its address in another case, and removes it', async () => {
      await page.setViewportSize(viewport)
      const address = `added-${viewport.width}@example.org`
      await page.goto(`${app.url}/dashboard/suppressions`)
      await page.fill('textarea[name=addresses]', address)
      await page.selectOption('select[name=scope]', 'marketing')
      await click(page.getByRole('button', { name: 'Suppress' }))
      await page.waitForURL(`${app.url}/dashboard/suppressions`)
      expect(await page.locator('.flash').textContent()).toContain('1 address suppressed')

      await page.fill('input[name=q]', `ADDED-${viewport.width}`)
      await page.selectOption('select[name=reason]', 'manual')
      await click(page.getByRole('button', { name: 'Search' }))
      const row = page.locator('tr', { hasText: address })
      expect(await row.textContent()).toContain('scope marketing')
      expect(await page.locator('tbody tr').count()).toBe(1)
      expect(await sideways(page)).toBeLessThanOrEqual(0)

      await click(row.getByRole('link', { name: 'Remove…' }))
      await click(page.getByRole('button', { name: 'Remove it from the list' }))
      await page.waitForURL(`${app.url}/dashboard/suppressions`)
      expect(await page.locator('.flash').textContent()).toContain(`${address} removed`)
      expect(await page.locator('table').textContent()).not.toContain(address)
    })
  })
}

describe('every step', () => {
  it('logged no error to the console', () => {
    const unforeseen = consoleErrors.filter(
      // The refused addition is answered 400, as it should be.
      (line) => !/Failed to load resource: the server responded with a status of 400/.test(line),
    )
    expect(unforeseen).toEqual([])
  })
})
