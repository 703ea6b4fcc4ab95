import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/**
 * Makes sure Debian's `pkg` is installed, judged by `binary` existing: installed when missing
 * and running as root (as CI does); otherwise the error says which command installs it.
 */
export function ensureDebianPackage(binary: string, pkg: string): void {
  if (existsSync(binary)) return
  if (process.getuid?.() !== 0) {
    throw new Error(`${binary} is missing: install it with "apt-get install -y ${pkg}" as root`)
  }
  // Test files run at once, each may find it missing: apt-get runs under one lock, and whoever
  // waited for it finds the package installed (two at once, one failed on apt's own lock).
  execFileSync(
    'flock',
    [
      path.join(os.tmpdir(), 'mailroom-apt-install.lock'),
      'sh',
      '-c',
      `[ -x ${binary} ] || { apt-get update -qq && apt-get install -y -qq ${pkg}; }`,
    ],
    { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } },
  )
}
