import { describe, expect, it } from 'vitest'
import { createAccount } from '../../src/accounts/accounts.ts'
import { failed, mailroom, ok, useCli } from '../support/cli.ts'

const cli = useCli()

let seq = 0
async function account(): Promise<string> {
  const created = await createAccount(cli.services.sql, {
    email: `sup-cli${++seq}@example.com`,
    plan: 'free',
  })
  return String(created.id)
}

describe('mailroom suppression', () => {
  it('add, list and remove an account’s addresses; the entries are the operator’s, manual', async () => {
    const id = await account()
    expect(
      ok(await mailroom(cli, ['suppression', 'add', '--account', id, 'ada@example.com', 'Bob@example.com'])),
    ).toEqual({ inserted: 2, existing: 0 })
    expect(
      ok(
        await mailroom(cli, [
          'suppression',
          'add',
          '--account',
          id,
          '--scope',
          'marketing',
          'ADA@example.com',
        ]),
      ),
    ).toEqual({ inserted: 0, existing: 1 })
    const listed = ok<{ email: string; reason: string; scope: string; source: unknown }[]>(
      await mailroom(cli, ['suppression', 'list', '--account', id]),
    )
    expect(listed.map((e) => [e.email, e.reason, e.scope, e.source])).toEqual([
      ['Bob@example.com', 'manual', 'all', { type: 'operator', id: null }],
      ['ada@example.com', 'manual', 'all', { type: 'operator', id: null }],
    ])
    expect(
      ok<unknown[]>(
        await mailroom(cli, ['suppression', 'list', '--account', id, '--email', 'BO', '--limit', '1']),
      ),
    ).toHaveLength(1)
    expect(ok(await mailroom(cli, ['suppression', 'remove', '--account', id, 'BOB@example.com']))).toEqual({
      removed: true,
    })
    expect(
      failed(await mailroom(cli, ['suppression', 'remove', '--account', id, 'bob@example.com']), 1),
    ).toMatch(/not suppressed/)
  })

  it('refuses a bad address, a limit outside 1-1000, an unknown reason or account, changing nothing', async () => {
    const id = await account()
    failed(await mailroom(cli, ['suppression', 'add', '--account', id, 'not-an-address']))
    for (const limit of ['0', '1001']) {
      failed(await mailroom(cli, ['suppression', 'list', '--account', id, '--limit', limit]))
    }
    failed(await mailroom(cli, ['suppression', 'list', '--account', id, '--reason', 'bounced']))
    failed(await mailroom(cli, ['suppression', 'list', '--account', '999999']), 1)
    expect(
      ok<unknown[]>(await mailroom(cli, ['suppression', 'list', '--account', id, '--limit', '1000'])),
    ).toEqual([])
  })
})
