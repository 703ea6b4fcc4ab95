/**
 * Debian's Chromium, driven by playwright-core, for the dashboard's end-to-end tests and
 * screenshots. Missing Chromium is installed when running as root (as CI does); otherwise the
 * error says which command installs it.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import { startSession } from '../../src/accounts/sessions.ts'
import type { TestApp } from './app.ts'
import { ensureDebianPackage } from './debian-packages.ts'

export const CHROMIUM = '/usr/bin/chromium'

const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export interface TestBrowser {
  context: BrowserContext
  close(): Promise<void>
}

/** Headless Chromium with a fresh profile of its own, removed on close. */
export async function launchBrowser(viewport = { width: 1280, height: 900 }): Promise<TestBrowser> {
  ensureDebianPackage(CHROMIUM, 'chromium')
  const profile = await mkdtemp(path.join(os.tmpdir(), 'mailroom-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport,
  })
  return {
    context,
    async close() {
      await context.close()
      await rm(profile, { recursive: true, force: true })
    },
  }
}

/** A phone's window and a wide screen's: the two sizes every dashboard page must fit. */
export const VIEWPORTS = [
  { width: 390, height: 844 },
  { width: 1280, height: 900 },
] as const

/** How far the page reaches past the window's right edge, in CSS pixels. */
export function sideways(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
}

/** Chromium signed in to the listening test app's dashboard as the account, and a page in it. */
export async function signedInPage(
  app: TestApp,
  accountId: number,
): Promise<{ browser: TestBrowser; page: Page }> {
  const { token } = await startSession(app.services.sql, accountId)
  const browser = await launchBrowser()
  await browser.context.addCookies([{ name: 'mailroom_session', value: token, url: app.url }])
  return { browser, page: await browser.context.newPage() }
}
