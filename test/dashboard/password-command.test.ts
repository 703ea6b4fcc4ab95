import { execFile } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { verifyPassword } from '../../src/accounts/passwords.ts'
import { startSession } from '../../src/accounts/sessions.ts'
import { useTestApp } from '../support/app.ts'
import { client, expectRedirect } from '../support/dashboard.ts'
import { mailroomEnv, ROOT } from '../support/queue.ts'

const app = useTestApp()

function mailroom(args: string[], input: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['bin/mailroom.js', ...args],
      { cwd: ROOT, env: mailroomEnv(app.db.url), timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? -1) : 0, stdout, stderr }),
    )
    child.stdin?.end(input)
  })
}

async function storedHash(accountId: number): Promise<string | undefined> {
  const [row] = await app.services.sql<{ hash: string }[]>`
    select hash from account_passwords where account_id = ${accountId}`
  return row?.hash
}

describe('mailroom account ... --password-stdin', () => {
  it('create stores only a scrypt hash of the password read from standard input', async () => {
    const run = await mailroom(
      ['account', 'create', '--email', 'cli-pw@example.com', '--password-stdin'],
      'twelve chars ok\n',
    )
    expect(run.code).toBe(0)
    const account = JSON.parse(run.stdout) as { id: number; email: string }
    expect(account.email).toBe('cli-pw@example.com')
    const hash = (await storedHash(account.id)) as string
    expect(hash).toMatch(/^scrypt\$ln=17,r=8,p=1\$/)
    expect(hash).not.toContain('twelve')
    expect(await verifyPassword('twelve chars ok', hash)).toBe(true)
  }, 60_000)

  it('create refuses a short password and makes no account', async () => {
    const run = await mailroom(
      ['account', 'create', '--email', 'short-pw@example.com', '--password-stdin'],
      'too short\n',
    )
    expect(run.code).toBe(1)
    expect(run.stderr).toBe('mailroom: A password must be 12 to 1024 characters long (this one has 9)\n')
    const rows = await app.services.sql`select 1 from accounts where email = 'short-pw@example.com'`
    expect(rows).toHaveLength(0)
  }, 60_000)

  it('set-password sets a new one and signs the account out everywhere', async () => {
    const created = await mailroom(['account', 'create', '--email', 'reset@example.com'], '')
    const account = JSON.parse(created.stdout) as { id: number }
    const { token } = await startSession(app.services.sql, account.id)
    const run = await mailroom(
      ['account', 'set-password', String(account.id), '--password-stdin'],
      'a new password here\n',
    )
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({ id: account.id, email: 'reset@example.com' })
    const browser = client(app)
    browser.cookies.set('mailroom_session', token)
    expectRedirect(await browser.get('/dashboard'), '/dashboard/login')
    expect(await verifyPassword('a new password here', await storedHash(account.id))).toBe(true)
    const usage = await mailroom(['account', 'set-password', String(account.id)], '')
    expect(usage.code).toBe(2)
    const missing = await mailroom(
      ['account', 'set-password', '999999', '--password-stdin'],
      'a new password here\n',
    )
    expect(missing.code).toBe(1)
    expect(missing.stderr).toBe('mailroom: no account with id 999999\n')
  }, 60_000)
})
