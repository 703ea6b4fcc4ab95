import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

export interface InstallOptions {
  /** debconf answers given before installing (`debconf-set-selections` lines), so none is asked. */
  debconf?: string[]
  /** A shell command run right after installing, e.g. to stop a service the package started. */
  afterInstall?: string
}

/**
 * Makes sure Debian's `pkg` is installed, judged by `binary` existing: installed when missing
 * and running as root (as CI does); otherwise the error says which command installs it.
 */
export function ensureDebianPackage(binary: string, pkg: string, options: InstallOptions = {}): void {
  if (existsSync(binary)) return
  if (process.getuid?.() !== 0) {
    throw new Error(`${binary} is missing: install it with "apt-get install -y ${pkg}" as root`)
  }
  const answers = (options.debconf ?? []).map((line) => `echo '${line}' | debconf-set-selections && `)
  const install = `apt-get update -qq && apt-get install -y -qq ${pkg}`
  const after = options.afterInstall ? ` && ${options.afterInstall}` : ''
  // Test files run at once, each may find it missing: apt-get runs under one lock, and whoever
  // waited for it finds the package installed (two at once, one failed on apt's own lock).
  execFileSync(
    'flock',
    [
      path.join(os.tmpdir(), 'mailroom-apt-install.lock'),
      'sh',
      '-c',
      `[ -x ${binary} ] || { ${answers.join('')}${install}${after}; }`,
    ],
    { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } },
  )
}
