import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { readMailbox } from '../../src/bounces/mailbox-reading.ts'
import { sealPassword } from '../../src/smtp/secret-box.ts'
import { failed, mailroom, ok, SLOW, useCli } from '../support/cli.ts'
import { startDovecot, type TestDovecot } from '../support/dovecot.ts'

const cli = useCli()
let server: TestDovecot
let connectionId: number

beforeAll(async () => {
  server = await startDovecot(inject('tls'))
  const account = ok<{ id: number }>(
    await mailroom(cli, ['account', 'create', '--email', 'mailbox-owner@example.com', '--plan', 'pro']),
  )
  const { host, port, username, password } = cli.sink587.login
  const added = await mailroom(
    cli,
    ['connection', 'add', '--account', String(account.id), '--host', host, '--port', String(port)].concat([
      '--username',
      username,
      '--password-stdin',
    ]),
    { input: password },
  )
  connectionId = ok<{ id: number }>(added).id
}, SLOW)
afterAll(() => server?.stop())

function set(extra: string[], input?: string) {
  const args = ['connection', 'mailbox', 'set', String(connectionId), '--host', server.host, ...extra]
  return mailroom(cli, args, input === undefined ? {} : { input })
}

describe('mailroom connection mailbox', () => {
  it(
    'set tests the login on 993 and saves it; show prints it without the password',
    async () => {
      const run = await set(
        ['--port', '993', '--username', server.user.username, '--password-stdin'],
        server.user.password,
      )
      expect(run.stdout).not.toContain(server.user.password)
      expect(ok(run)).toMatchObject({
        connection_id: connectionId,
        port: 993,
        folder: 'INBOX',
        move_handled: true,
      })
      const shown = await mailroom(cli, ['connection', 'mailbox', 'show', String(connectionId)])
      expect(ok(shown)).toMatchObject({ username: server.user.username, same_login_as_smtp: false })
    },
    SLOW,
  )

  it(
    'set on 143 with --no-move and a folder; test logs in again',
    async () => {
      await server.append(server.user, 'Subject: x\r\n\r\ny\r\n', 'Reports')
      const args = [
        '--port',
        '143',
        '--username',
        server.user.username,
        '--password-stdin',
        '--folder',
        'Reports',
      ]
      const run = await set([...args, '--no-move'], server.user.password)
      expect(ok(run)).toMatchObject({ port: 143, folder: 'Reports', move_handled: false })
      expect(ok(await mailroom(cli, ['connection', 'mailbox', 'test', String(connectionId)]))).toEqual({
        ok: true,
      })
    },
    SLOW,
  )

  it(
    "a wrong password exits non-zero with the server's reason and changes nothing",
    async () => {
      const run = await set(
        ['--port', '993', '--username', server.user.username, '--password-stdin'],
        'wrong-pass-123',
      )
      const line = failed(run)
      expect(line).toMatch(/refused the login/)
      expect(line).not.toContain('wrong-pass-123')
      const shown = ok(await mailroom(cli, ['connection', 'mailbox', 'show', String(connectionId)]))
      expect(shown).toMatchObject({ port: 143, folder: 'Reports' })
    },
    SLOW,
  )

  it('set without a login, or with both a login and --same-login-as-smtp, is a usage error', async () => {
    failed(await set(['--port', '993']))
    failed(await set(['--port', '993', '--username', 'x', '--same-login-as-smtp']))
  })

  it(
    "show prints why the last reading failed, once the mailbox's login was refused",
    async () => {
      // The password was changed at the provider after the mailbox was saved.
      const sealed = sealPassword(cli.services.secret, 'changed-at-the-provider')
      await cli.db
        .sql`update connection_mailboxes set password_encrypted = ${sealed} where connection_id = ${connectionId}`
      const { sql, secret, log, metrics } = cli.services
      await readMailbox({ sql, secret, log, metrics, allowPrivate: true }, connectionId)
      const shown = ok(await mailroom(cli, ['connection', 'mailbox', 'show', String(connectionId)]))
      expect(shown).toMatchObject({
        failure: expect.stringMatching(/refused the login/),
        failed_at: expect.any(String),
      })
    },
    SLOW,
  )

  it(
    'clear forgets the mailbox; test then has nothing to test',
    async () => {
      expect(ok(await mailroom(cli, ['connection', 'mailbox', 'clear', String(connectionId)]))).toEqual({
        cleared: true,
      })
      expect(ok(await mailroom(cli, ['connection', 'mailbox', 'show', String(connectionId)]))).toBeNull()
      expect(failed(await mailroom(cli, ['connection', 'mailbox', 'test', String(connectionId)]))).toMatch(
        /has no mailbox/,
      )
    },
    SLOW,
  )
})
