/**
 * Debian's Chromium, driven by playwright-core, for the dashboard's end-to-end tests and
 * screenshots. Missing Chromium is installed when running as root (as CI does); otherwise the
 * error says which command installs it.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { type BrowserContext, chromium } from 'playwright-core'
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
