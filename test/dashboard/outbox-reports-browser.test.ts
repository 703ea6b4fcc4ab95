/**
 * The message page in Chromium, on a phone (390 px) and a wide screen (1280 px), with a bounce
 * and a complaint in its history: each shown with its recipient, status and diagnostic, the
 * recipients' statuses saying so, and, beside the longest address there is, nothing scrolling
 * the page sideways and nothing of the report's diagnostic run.
 */
import { mkdir } from 'node:fs/promises'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSession } from '../../src/accounts/sessions.ts'
import { recordReport } from '../../src/db/reports.ts'
import { suppressionStrength } from '../../src/suppressions/strength.ts'
import { useTestApp } from '../support/app.ts'
import { launchBrowser, type TestBrowser } from '../support/browser.ts'
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
    {
      recipient: 'gone@example.com',
      kind: 'bounced',
      status: '5.1.1',
      diagnostic: DIAGNOSTIC,
      suppression: {
        reason: 'hard_bounce',
        strength: suppressionStrength({ reason: 'hard_bounce', scope: 'all' }),
      },
    },
    {
      recipient: 'angry@example.com',
      kind: 'complained',
      status: null,
      diagnostic: 'abuse',
      suppression: {
        reason: 'complaint',
        strength: suppressionStrength({ reason: 'complaint', scope: 'all' }),
      },
    },
  ])
  path = `/dashboard/outbox/${outboxId}`
  const { token } = await startSession(app.services.sql, s.accountId)
  browser = await launchBrowser()
  await browser.context.addCookies([{ name: 'mailroom_session', value: token, url: app.url }])
  page = await browser.context.newPage()
}, 120_000)

afterAll(async () => {
  await browser?.close()
})

for (const viewport of [
  { width: 390, height: 844 },
  { width: 1280, height: 900 },
]) {
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
      expect(
        await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
      ).toBeLessThanOrEqual(0)
      if (SHOTS) {
        await mkdir(SHOTS, { recursive: true })
        await page.screenshot({ path: `${SHOTS}/message-reports-${viewport.width}.png`, fullPage: true })
      }
    })
  })
}
