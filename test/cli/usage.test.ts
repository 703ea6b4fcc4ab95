import { describe, expect, it } from 'vitest'
import type { CliIo } from '../../src/cli/program.ts'
import { failed, mailroom, useCli } from '../support/cli.ts'

const cli = useCli()

const mustNotOpen: CliIo['open'] = () => {
  throw new Error('the command opened the database')
}

describe('mailroom --help, --version and usage errors', () => {
  it.each([
    [['--help'], 'Usage: mailroom [options] [command]'],
    [['-h'], 'Usage: mailroom [options] [command]'],
    [['help'], 'Usage: mailroom [options] [command]'],
    [['account', '--help'], 'Usage: mailroom account [options] [command]'],
    [['help', 'connection'], 'Usage: mailroom connection [options] [command]'],
    [
      ['connection', 'add', '-h'],
      'Usage: mailroom connection add --account <id> --host <host> --port <port>',
    ],
    [['migrate', '--help'], 'Usage: mailroom migrate'],
    [['start', '--help'], 'Usage: mailroom start [--no-worker] [--worker-only]'],
  ])('%j prints usage on stdout and exits 0, opening nothing', async (args, usage) => {
    const run = await mailroom(cli, args, { open: mustNotOpen })
    expect(run).toMatchObject({ code: 0, stderr: '' })
    expect(run.stdout).toContain(usage)
  })

  it('lists every command of the operator interface', async () => {
    const help = async (...args: string[]) => (await mailroom(cli, [...args, '--help'])).stdout
    const top = await help()
    for (const group of ['start', 'migrate', 'account', 'connection', 'key', 'outbox', 'batch']) {
      expect(top).toMatch(new RegExp(`^  ${group}\\b`, 'm'))
    }
    const commands: Record<string, string[]> = {
      account: ['create', 'set-plan', 'list'],
      connection: ['add', 'list', 'update', 'disable', 'enable', 'pause', 'resume', 'delete'],
      key: ['create', 'list', 'rotate', 'revoke', 'scope'],
      outbox: ['list'],
      batch: ['failures', 'retry'],
    }
    for (const [group, verbs] of Object.entries(commands)) {
      const text = await help(group)
      for (const verb of verbs) expect(text).toMatch(new RegExp(`^  ${verb}\\b`, 'm'))
    }
  })

  it('--version prints the package version', async () => {
    const run = await mailroom(cli, ['--version'], { open: mustNotOpen })
    expect(run).toMatchObject({ code: 0, stdout: '1.0.0\n', stderr: '' })
  })

  it.each([
    [['account', 'explode'], /unknown command 'explode'.*usage: mailroom account/],
    [
      ['account', 'create', '--email', 'x@example.com', '--colour', 'blue'],
      /unknown option '--colour'.*usage: mailroom account create --email <addr>/,
    ],
    [['key', 'create', '--account'], /'--account <id>' argument missing.*usage: mailroom key create/],
    [['account', 'list', 'extra'], /too many arguments.*usage: mailroom account list/],
    [['migrate', 'now'], /too many arguments.*usage: mailroom migrate/],
    [['connection', 'pause', '1', '2'], /too many arguments.*usage: mailroom connection pause <id>/],
    [['account', 'set-plan', 'abc', 'pro'], /'abc' is invalid for argument 'account-id'.*whole number/],
    [['account', 'create', '--email', 'x@example.com', '--plan', 'gold'], /'gold' is invalid.*free, pro/],
    [['outbox', 'list', '--account', '1', '--limit', '0'], /--limit.*at least 1/],
    [['key', 'scope', '1'], /give --connection <id> or --all.*usage: mailroom key scope <key-id>/],
    [['key', 'scope', '1', '--connection', '2', '--all'], /cannot be used with/],
    [['connection', 'update', '1', '--quota', '5'], /--quota and --per go together/],
    [['connection', 'update', '1', '--no-quota', '--per', 'day'], /--no-quota takes no --per/],
    [['account', 'set-plan', '1', 'gold'], /'gold' is invalid.*free, pro.*usage: mailroom account set-plan/],
    [['account', 'set-plan', '2147483648', 'pro'], /whole number up to 2147483647/],
    [['connection', 'list', '--account', '99999999999999999999'], /whole number up to 2147483647/],
    [['connection', 'pause', '1', '--minutes', '9999999999999'], /whole number up to 2147483647/],
    [['start', '--no-worker', '--worker-only'], /--worker-only' cannot be used with option '--no-worker'/],
  ])('refuses %j with exit 2 and one line with the usage, creating nothing', async (args, reason) => {
    const run = await mailroom(cli, args)
    expect(failed(run, 2)).toMatch(reason)
    expect(await cli.db.sql`select id from accounts where email = 'x@example.com'`).toHaveLength(0)
  })

  it("prints a group's help on stderr and exits 2 when its command is missing", async () => {
    const run = await mailroom(cli, ['connection'], { open: mustNotOpen })
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain('Usage: mailroom connection')
  })

  it("a refusal of the work exits 1 with the catalog's message", async () => {
    expect(failed(await mailroom(cli, ['account', 'set-plan', '999999', 'pro']), 1)).toBe(
      'mailroom: no account with id 999999',
    )
  })

  it('refuses an empty password from standard input as a usage error, before any login is tried', async () => {
    for (const input of ['', '\n']) {
      const run = await mailroom(
        cli,
        [
          'connection',
          'add',
          '--account',
          '1',
          '--host',
          'smtp.example.com',
          '--port',
          '587',
          '--username',
          'u@example.com',
          '--password-stdin',
        ],
        { input },
      )
      expect(failed(run, 2)).toMatch(
        /--password-stdin read an empty password.*usage: mailroom connection add/,
      )
    }
  })

  it.each([['connection'], ['key'], ['outbox'], ['form']])(
    '%s list for an account that does not exist exits 1, not with an empty list',
    async (group) => {
      expect(failed(await mailroom(cli, [group, 'list', '--account', '999999']), 1)).toBe(
        'mailroom: no account with id 999999',
      )
    },
  )
})
