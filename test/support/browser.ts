/**
 * Debian's Chromium, driven by playwright-core, for the dashboard's end-to-end tests and
 * screenshots. Missing Chromium is installed when running as root (as CI does); otherwise the
 * error says which command installs it.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { type BrowserContext, chromium } from 'playwright-core'

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

function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return
  if (process.getuid?.() !== 0) {
    throw new Error(
      `${CHROMIUM} is missing: install Debian's Chromium with "apt-get install -y chromium" as root`,
    )
  }
  // Test files run at once, each may find it missing: apt-get runs under one lock, and whoever
  // waited for it finds Chromium installed (two at once, one failed on apt's own lock).
  execFileSync(
    'flock',
    [
      path.join(os.tmpdir(), 'mailroom-chromium-install.lock'),
      'sh',
      '-c',
      `[ -x ${CHROMIUM} ] || { apt-get update && apt-get install -y chromium; }`,
    ],
    { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } },
  )
}

export interface TestBrowser {
  context: BrowserContext
  close(): Promise<void>
}

/** Headless Chromium with a fresh profile of its own, removed on close. */
export async function launchBrowser(viewport = { width: 1280, height: 900 }): Promise<TestBrowser> {
  ensureChromium()
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
