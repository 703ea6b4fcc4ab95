import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { ImapLoginError, type ImapPort, verifyImapLogin } from '../../src/imap/login.ts'
import { startDovecot, type TestDovecot } from '../support/dovecot.ts'

let server: TestDovecot

beforeAll(async () => {
  server = await startDovecot(inject('tls'))
})
afterAll(() => server?.stop())

function verify(
  port: ImapPort,
  options: { password?: string; folder?: string; allowPrivate?: boolean } = {},
) {
  const login = {
    host: server.host,
    port,
    username: server.user.username,
    password: options.password ?? server.user.password,
  }
  return verifyImapLogin(login, options.folder ?? 'INBOX', options.allowPrivate ?? true)
}

describe('testing a mailbox login', () => {
  it.each([993, 143] as const)('logs in on port %s and opens the folder', async (port) => {
    await expect(verify(port)).resolves.toBeUndefined()
  })

  it("refuses a wrong password with the server's reason, and never repeats the password", async () => {
    const error = await verify(993, { password: 'not-the-password' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ImapLoginError)
    expect((error as Error).message).toMatch(
      /refused the login: .*AUTHENTICATIONFAILED|Authentication failed/,
    )
    expect((error as Error).message).not.toContain('not-the-password')
  })

  it('refuses a folder the mailbox does not have', async () => {
    await expect(verify(143, { folder: 'Nowhere' })).rejects.toThrow(/"Nowhere" cannot be opened/)
  })

  it('refuses a private host unless private hosts are allowed', async () => {
    await expect(verify(993, { allowPrivate: false })).rejects.toThrow(/MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS/)
  })
})
