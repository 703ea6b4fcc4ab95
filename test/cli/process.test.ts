import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { failed, mailroomProcess, ok, SLOW, useCli } from '../support/cli.ts'

const cli = useCli()

describe('mailroom as a process', () => {
  it(
    'prints help on stdout and exits 0; refuses a bad option with exit 2 and one line on stderr',
    async () => {
      const [help, bad] = await Promise.all([
        mailroomProcess(cli, ['--help']),
        mailroomProcess(cli, ['account', 'list', '--colour', 'blue']),
      ])
      expect(help).toMatchObject({ code: 0, stderr: '' })
      expect(help.stdout).toContain('Usage: mailroom')
      expect(failed(bad, 2)).toMatch(/unknown option '--colour'/)
    },
    SLOW,
  )

  it(
    "reads a password from standard input; a refused login exits 1 with the server's reason",
    async () => {
      const [account] = await cli.db.sql<{ id: number }[]>`
        insert into accounts (email, plan) values ('stdin-owner@example.com', 'pro') returning id`
      const args = (input: string) =>
        mailroomProcess(
          cli,
          [
            'connection',
            'add',
            '--account',
            String(account?.id),
            '--host',
            cli.sink587.host,
            '--port',
            '587',
            '--username',
            cli.sink587.username,
            '--password-stdin',
          ],
          { input },
        )
      // One after the other: once the right one is saved, the same login is refused as a duplicate.
      const wrong = await args('wrong-password\n')
      const added = await args(`${cli.sink587.password}\n`)
      expect(ok(added)).toMatchObject({ account_id: account?.id, from: cli.sink587.username })
      const reason = failed(wrong, 1)
      expect(reason).toContain('535')
      expect(reason).not.toContain('wrong-password')
    },
    SLOW,
  )

  it(
    'refuses bad settings at start with one line naming each, before creating anything',
    async () => {
      const dataDir = path.join(os.tmpdir(), `mailroom-never-${randomBytes(4).toString('hex')}`)
      const run = await mailroomProcess(cli, ['start'], {
        env: { DATABASE_URL: undefined, MAILROOM_DATA_DIR: dataDir, PORT: '70000', LOG_LEVEL: 'verbose' },
      })
      const line = failed(run, 1)
      expect(line).toContain('PORT must be a whole number from 0 to 65535, not "70000"')
      expect(line).toContain('LOG_LEVEL must be one of')
      expect(existsSync(dataDir)).toBe(false)
    },
    SLOW,
  )

  it(
    'refuses to run with DATABASE_URL but no MAILROOM_SECRET, naming it',
    async () => {
      const reason = failed(
        await mailroomProcess(cli, ['account', 'list'], { env: { MAILROOM_SECRET: undefined } }),
        1,
      )
      expect(reason).toContain('MAILROOM_SECRET')
    },
    SLOW,
  )
})
