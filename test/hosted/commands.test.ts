/**
 * The operator commands of the hosted pages (docs/operator-cli.md): `form create|list|delete` and
 * `signup-page set|disable|enable`, run in this process as the binary runs them.
 */
import { describe, expect, it } from 'vitest'
import { createAudience } from '../../src/audiences/audiences.ts'
import { useTestApp } from '../support/app.ts'
import { runCommand } from '../support/cli.ts'
import { startSender } from '../support/sending.ts'

const PUBLIC = 'https://mail.example.test'
const app = useTestApp({ publicUrl: PUBLIC })

async function mailroom(...args: string[]) {
  const run = await runCommand(args, async () => ({ services: app.services, close: async () => {} }))
  return { ...run, json: run.code === 0 ? JSON.parse(run.stdout) : undefined }
}

describe('mailroom form', () => {
  it('creates, lists and deletes forms', async () => {
    const s = await startSender(app, 'cliform')
    const created = await mailroom(
      'form',
      'create',
      '--account',
      String(s.accountId),
      '--name',
      'Contact',
      '--connection',
      String(s.connectionId),
      '--redirect',
      'https://example.com/thanks',
      '--allow-origin',
      'https://example.com',
      'https://www.example.com',
    )
    expect(created.code).toBe(0)
    expect(created.json).toMatchObject({
      id: expect.any(Number),
      public_id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      name: 'Contact',
      connection_id: s.connectionId,
      redirect_url: 'https://example.com/thanks',
      allowed_origins: ['https://example.com', 'https://www.example.com'],
    })
    expect(created.json.url).toBe(`${PUBLIC}/forms/${created.json.public_id}`)
    const list = await mailroom('form', 'list', '--account', String(s.accountId))
    expect(list.json.map((f: { id: number }) => f.id)).toEqual([created.json.id])
    expect(await mailroom('form', 'delete', String(created.json.id))).toMatchObject({
      code: 0,
      json: { deleted: true },
    })
    const again = await mailroom('form', 'delete', String(created.json.id))
    expect(again.code).not.toBe(0)
    expect(again.stderr).toContain(`No form with id ${created.json.id}`)
  })

  it('refuses bad settings and unknown accounts with a one-line reason', async () => {
    const s = await startSender(app, 'cliformbad')
    for (const args of [
      ['--account', String(s.accountId), '--name', 'x', '--redirect', 'javascript:alert(1)'],
      [
        '--account',
        String(s.accountId),
        '--name',
        'x',
        '--redirect',
        'https://example.com/\r\nSet-Cookie: a=b',
      ],
      ['--account', String(s.accountId), '--name', 'x', '--allow-origin', 'example.com'],
      ['--account', '999999', '--name', 'x'],
    ]) {
      const run = await mailroom('form', 'create', ...args)
      expect(run.code).not.toBe(0)
      expect(run.stdout).toBe('')
      expect(run.stderr.trim().split('\n')).toHaveLength(1)
    }
    const control = await mailroom(
      'form',
      'create',
      ...['--account', String(s.accountId), '--name', 'x', '--redirect', 'https://example.com/a\tb'],
    )
    expect(control.stderr).toContain(
      'The redirect URL cannot contain line breaks, tabs or other control characters',
    )
    const list = await mailroom('form', 'list', '--account', String(s.accountId))
    expect(list.json).toEqual([])
  })
})

describe('mailroom signup-page', () => {
  it('sets, disables and enables a page', async () => {
    const s = await startSender(app, 'clipage', { plan: 'pro' })
    const audience = await createAudience(app.services.sql, s.accountId, { name: 'News' })
    const set = await mailroom(
      'signup-page',
      'set',
      '--audience',
      String(audience.id),
      '--slug',
      'cli-news',
      '--title',
      'The news',
      '--description',
      'Weekly',
      '--double-opt-in',
    )
    expect(set.code).toBe(0)
    expect(set.json).toMatchObject({
      audience_id: audience.id,
      slug: 'cli-news',
      url: `${PUBLIC}/signup/cli-news`,
      title: 'The news',
      description: 'Weekly',
      connection_id: null,
      double_opt_in: true,
      enabled: true,
    })
    // Omitted settings are kept; --no-double-opt-in turns it off.
    const changed = await mailroom(
      'signup-page',
      'set',
      '--audience',
      String(audience.id),
      '--slug',
      'cli-news',
      '--no-double-opt-in',
    )
    expect(changed.json).toMatchObject({ title: 'The news', description: 'Weekly', double_opt_in: false })
    expect((await mailroom('signup-page', 'disable', '--audience', String(audience.id))).json.enabled).toBe(
      false,
    )
    expect((await app.requestRoot('/signup/cli-news')).status).toBe(404)
    expect((await mailroom('signup-page', 'enable', '--audience', String(audience.id))).json.enabled).toBe(
      true,
    )
    expect((await app.requestRoot('/signup/cli-news')).status).toBe(200)
    const bad = await mailroom('signup-page', 'set', '--audience', String(audience.id), '--slug', 'no')
    expect(bad.code).not.toBe(0)
    expect(bad.stderr).toContain('3 to 64')
    const none = await createAudience(app.services.sql, s.accountId, { name: 'None' })
    expect((await mailroom('signup-page', 'disable', '--audience', String(none.id))).stderr).toContain(
      'has no sign-up page',
    )
  })
})
