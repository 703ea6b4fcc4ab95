/**
 * The message page in Chromium, on a phone (390 px) and a wide screen (1280 px), with a bounce
 * and a complaint in its history: each shown with its recipient, status and diagnostic, the
 * recipients' statuses saying so, and, beside the longest address there is, nothing scrolling
 * the page sideways and nothing of the report's diagnostic run.
 */
import { mkdir } from 'node:fs/promises'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { recordReport } from '../../src/db/reports.ts'
import { useTestApp } from '../support/app.ts'
import { suppressingLine } from '../support/bounce-reports.ts'
import { sideways, signedInPage, type TestBrowser, VIEWPORTS } from '../support/browser.ts'
import { postSend, startSender } from '../support/sending.ts'

const app = useTestApp({}, { listen: true })
/** 254 characters, the longest address the API takes. */
const LONGEST = `${'l'.repeat(64)}@${'d'.repeat(63)}.${'e'.repeat(63)}.${'f'.repeat(57)}.com`
const SCRIPT = '<script>window.ran = true</script>'
const DIAGNOSTIC = `550 5.1.1 ${SCRIPT} ${'the-mailbox-does-not-exist-'.repeat(10)}`
/** Where the screenshots go, for a person to look at; not compared by the test. */
const SHOTS = process.env.MAILROOM_SCREENSHOTS

let browser: TestBrowser
let page: Page
let path: string

beforeAll(async () => {
  const s = await startSender(app, 'page-reports', { plan: 'pro' })
  const sent = await postSend(app, s.key, {
    to: ['gone@example.com', 'angry@example.com', LONGEST],
    subject: 'Hello',
    text_body: 'x',
  })
  const { outboxId, messageId } = sent.body as { outboxId: number; messageId: string }
  const origin = { accountId: s.accountId, connectionId: s.connectionId, messageId }
  await recordReport(app.services.sql, origin, [
    suppressingLine('bounced', 'gone@example.com', DIAGNOSTIC, '5.1.1'),
    suppressingLine('complained', 'angry@example.com', 'abuse'),
  ])
  path = `/dashboard/outbox/${outboxId}`
  ;({ browser, page } = await signedInPage(app, s.accountId))
}, 120_000)

afterAll(async () => {
  await browser?.close()
})

for (const viewport of VIEWPORTS) {
  describe(`${viewport.width} px wide`, () => {
    it('shows the bounce and the complaint in the history and the recipients, without scrolling sideways', async () => {
      await page.setViewportSize(viewport)
      await page.goto(`${app.url}${path}`)
      const bounced = page.locator('tr[data-event=bounced]')
      const complained = page.locator('tr[data-event=complained]')
      expect(await bounced.textContent()).toContain('Bounced: gone@example.com (5.1.1)')
      expect(await bounced.textContent()).toContain(SCRIPT)
      expect(await bounced.textContent()).toContain('address suppressed')
      expect(await complained.textContent()).toContain('Complaint: angry@example.com')
      expect(await complained.textContent()).toContain('feedback type: abuse')
      const recipients =
        (await page.locator('section', { hasText: 'Recipients' }).first().textContent()) ?? ''
      expect(recipients).toMatch(/bounced[\s\S]*complained/)
      expect(await page.evaluate(() => (window as { ran?: boolean }).ran)).toBeUndefined()
      expect(await sideways(page)).toBeLessThanOrEqual(0)
      if (SHOTS) {
        await mkdir(SHOTS, { recursive: true })
        await page.screenshot({ path: `${SHOTS}/message-reports-${viewport.width}.png`, fullPage: true })
      }
    })
  })
}
