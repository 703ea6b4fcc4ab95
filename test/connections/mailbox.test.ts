import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { clearMailbox, getMailbox, setMailbox, testMailbox } from '../../src/connections/mailbox.ts'
import { openPassword } from '../../src/smtp/secret-box.ts'
import { useConnections } from '../support/connections.ts'
import { startDovecot, type TestDovecot } from '../support/dovecot.ts'
import { refusal } from '../support/refusal.ts'

const { app, sinks, account, add } = useConnections()
let server: TestDovecot

beforeAll(async () => {
  // The second user has the 2525 sink's SMTP login, for a mailbox with the same login as SMTP.
  server = await startDovecot(inject('tls'), ['reports@example.com', sinks.starttls2525.login])
})
afterAll(() => server?.stop())

async function connection() {
  const owner = await account()
  return add(owner.id)
}

function ownLogin(port: 993 | 143 = 993) {
  return { host: server.host, port, username: server.user.username, password: server.user.password }
}

async function storedRow(connectionId: number) {
  const [row] = await app.db.sql<{ username: string | null; password_encrypted: string | null }[]>`
    select username, password_encrypted from connection_mailboxes where connection_id = ${connectionId}`
  return row
}

describe("a connection's mailbox", () => {
  it.each([993, 143] as const)(
    'is saved after its login on port %s is tested, INBOX and moving by default',
    async (port) => {
      const c = await connection()
      const saved = await setMailbox(app.services, c.id, ownLogin(port))
      expect(saved).toMatchObject({
        connection_id: c.id,
        host: server.host,
        port,
        username: server.user.username,
        same_login_as_smtp: false,
        folder: 'INBOX',
        move_handled: true,
      })
      expect(JSON.stringify(saved)).not.toContain(server.user.password)
      expect(await getMailbox(app.services.sql, c.id)).toEqual(saved)
    },
  )

  it('keeps its password sealed with MAILROOM_SECRET, never in clear', async () => {
    const c = await connection()
    await setMailbox(app.services, c.id, ownLogin())
    const row = await storedRow(c.id)
    expect(row?.password_encrypted).not.toContain(server.user.password)
    expect(openPassword(app.services.secret, row?.password_encrypted ?? '')).toBe(server.user.password)
  })

  it("can use the connection's SMTP login, storing no second password", async () => {
    const c = await connection()
    const saved = await setMailbox(app.services, c.id, {
      host: server.host,
      port: 993,
      sameLoginAsSmtp: true,
    })
    expect(saved).toMatchObject({ username: null, same_login_as_smtp: true })
    expect(await storedRow(c.id)).toEqual({ username: null, password_encrypted: null })
    await expect(testMailbox(app.services, c.id)).resolves.toEqual({ ok: true })
  })

  it('takes another folder and the switch that leaves handled reports in place', async () => {
    const c = await connection()
    await server.append(server.user, 'Subject: x\r\n\r\ny\r\n', 'Bounces')
    const saved = await setMailbox(app.services, c.id, {
      ...ownLogin(143),
      folder: 'Bounces',
      moveHandled: false,
    })
    expect(saved).toMatchObject({ folder: 'Bounces', move_handled: false })
  })

  it("refuses a wrong password with the server's reason and saves nothing", async () => {
    const c = await connection()
    const error = await refusal(
      setMailbox(app.services, c.id, { ...ownLogin(), password: 'not-the-password' }),
    )
    expect(error.code).toBe('MAILBOX_LOGIN_FAILED')
    expect(error.message).toMatch(/refused the login/)
    expect(error.message).not.toContain('not-the-password')
    expect(await getMailbox(app.services.sql, c.id)).toBeNull()
  })

  it('refuses a private host unless private hosts are allowed', async () => {
    const c = await connection()
    const strict = { ...app.services, config: { ...app.services.config, allowPrivateSmtpHosts: false } }
    const error = await refusal(setMailbox(strict, c.id, ownLogin()))
    expect(error.code).toBe('MAILBOX_LOGIN_FAILED')
    expect(error.message).toMatch(/MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS/)
    expect(await getMailbox(app.services.sql, c.id)).toBeNull()
  })

  it.each([
    ['a port other than 993 and 143', { port: 995 }],
    ['no password', { password: '' }],
    ['a login and the SMTP login at once', { sameLoginAsSmtp: true }],
    ['an empty folder', { folder: ' ' }],
    ['a folder with a line break', { folder: 'INBOX\r\nA1 LOGOUT' }],
  ])('refuses %s before any login', async (_name, change) => {
    const c = await connection()
    const error = await refusal(setMailbox(app.services, c.id, { ...ownLogin(), ...change }))
    expect(error.code).toBe('INVALID_CONNECTION')
  })

  it('is cleared with its password, and a cleared mailbox has nothing to test', async () => {
    const c = await connection()
    await setMailbox(app.services, c.id, ownLogin())
    expect(await clearMailbox(app.services.sql, c.id)).toEqual({ cleared: true })
    expect(await storedRow(c.id)).toBeUndefined()
    expect((await refusal(testMailbox(app.services, c.id))).code).toBe('INVALID_CONNECTION')
    expect(await clearMailbox(app.services.sql, c.id)).toEqual({ cleared: false })
  })

  it('answers for an unknown connection as not found', async () => {
    expect((await refusal(setMailbox(app.services, 999_999, ownLogin()))).code).toBe('UNKNOWN_CONNECTION')
    expect((await refusal(clearMailbox(app.services.sql, 999_999))).code).toBe('UNKNOWN_CONNECTION')
  })
})
