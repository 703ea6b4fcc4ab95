/**
 * The overview in Chromium, on a phone (390 px) and a wide screen (1280 px), its connections'
 * addresses as long as they come and one hostile: nothing scrolls sideways, the rates table
 * shows whole (the complaint rate and its flag in view without scrolling), and nothing runs.
 */
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addConnection } from '../../src/connections/connections.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import { sideways, signedInPage, type TestBrowser, VIEWPORTS } from '../support/browser.ts'

const app = useTestApp({}, { listen: true })
/** 254 characters, the longest address there is. */
const LONGEST = `${'l'.repeat(64)}@${'d'.repeat(63)}.${'e'.repeat(63)}.${'f'.repeat(57)}.com`
const HOSTILE = '<script>window.ran = true</script>@example.com'

let browser: TestBrowser
let page: Page

beforeAll(async () => {
  const sink = await app.sink({ port: 2525 })
  const owner = await seedAccount(app, {
    plan: 'pro',
    connection: { ...sink.login, from: 'plain@example.com' },
  })
  const { sql } = app.services
  // As stored, whatever a form would have refused: the page must show it as text.
  await sql`update connections set from_address = ${HOSTILE} where id = ${owner.connection?.id as number}`
  const second = await addConnection(app.services, {
    accountId: owner.account.id,
    ...sink.login,
    from: LONGEST,
  })
  const recipients = Array.from({ length: 250 }, (_, i) => ({
    address: `r${i}@example.com`,
    status: i < 2 ? 'complained' : 'accepted',
    reply: null,
  }))
  for (const connectionId of [owner.connection?.id as number, second.id]) {
    await sql`
      insert into outbox (account_id, connection_id, status, from_address, to_addresses, subject, message_id,
                          recipients, sent_at)
      values (${owner.account.id}, ${connectionId}, 'sent', 'x@example.com', ${['r0@example.com']}, 's',
              ${`<${connectionId}@example.com>`}, ${sql.json(recipients)}, mailroom_now())`
  }
  ;({ browser, page } = await signedInPage(app, owner.account.id))
}, 120_000)

afterAll(async () => {
  await browser?.close()
})

for (const viewport of VIEWPORTS) {
  describe(`the overview, ${viewport.width} px wide`, () => {
    it('shows each connection’s rates whole, the complaint rate flagged at or above 0.3 %, without scrolling sideways', async () => {
      await page.setViewportSize(viewport)
      await page.goto(`${app.url}/dashboard`)
      expect(await sideways(page)).toBeLessThanOrEqual(0)
      const section = page.locator('section', { hasText: 'Bounces and complaints, the last 7 days' })
      const box = section.locator('.overflow-auto')
      expect(await box.evaluate((element) => element.scrollWidth - element.clientWidth)).toBeLessThanOrEqual(
        0,
      )
      for (const from of [HOSTILE, LONGEST]) {
        const row = section.locator('tr', { hasText: from })
        expect(await row.textContent()).toContain('Complaint rate 0.80 % at or above the 0.3 % line')
        const flag = row.locator('mark')
        const flagBox = await flag.boundingBox()
        expect((flagBox?.x ?? -1) >= 0 && (flagBox?.x ?? 0) + (flagBox?.width ?? 0) <= viewport.width).toBe(
          true,
        )
      }
      expect(await page.evaluate(() => (window as { ran?: boolean }).ran)).toBeUndefined()
    })
  })
}
