import { beforeAll, describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from '../support/app.ts'
import { type Client, signedIn, textOf } from '../support/dashboard.ts'
import { HOSTILE, json } from '../support/dashboard-pages.ts'
import { startSink } from '../support/sending.ts'

const app = useTestApp()

/** Another account's resources, made through the same domain code and API an owner uses. */
interface Theirs {
  connectionId: number
  keyId: number
  outboxId: number
  batchId: number
  audienceId: number
  memberId: number
  templateId: number
}

let theirs: Theirs
let mine: { browser: Client; accountId: number }

beforeAll(async () => {
  const sink = await startSink(app, { rejectRecipients: ['refused@example.com'] })
  const other = await seedAccount(app, {
    plan: 'pro',
    connection: { ...sink.login, from: 'other@example.com', rate: 6000 },
  })
  const key = other.key
  const sent = await json(
    await app.request('/send', { key, body: { to: 'ada@example.com', subject: HOSTILE, text_body: 'x' } }),
  )
  const batch = await json(
    await app.request('/send/batch', {
      key,
      body: { name: HOSTILE, recipients: ['a@example.com'], template: { subject: 's', text_body: 't' } },
    }),
  )
  const audience = await json(await app.request('/audiences', { key, body: { name: HOSTILE } }))
  const audienceId = (audience.audience as { id: number }).id
  await app.request(`/audiences/${audienceId}/members`, {
    key,
    body: { members: [{ email: 'm@example.com' }] },
  })
  const members = await json(await app.request(`/audiences/${audienceId}/members`, { key }))
  const template = await json(
    await app.request('/templates', { key, body: { name: HOSTILE, subject: HOSTILE, text_body: 't' } }),
  )
  theirs = {
    connectionId: other.connection?.id as number,
    keyId: other.keyId,
    outboxId: sent.outboxId as number,
    batchId: batch.batch_id as number,
    audienceId,
    memberId: (members.members as { id: number }[])[0]?.id as number,
    templateId: (template.template as { id: number }).id,
  }
  const signed = await signedIn(app, { plan: 'pro' })
  mine = { browser: signed.browser, accountId: signed.account.id }
})

describe("another account's IDs", () => {
  const pages = () => [
    `/dashboard/connections/${theirs.connectionId}`,
    `/dashboard/connections/${theirs.connectionId}/delete`,
    `/dashboard/outbox/${theirs.outboxId}`,
    `/dashboard/batches/${theirs.batchId}`,
    `/dashboard/batches/${theirs.batchId}/live`,
    `/dashboard/audiences/${theirs.audienceId}`,
    `/dashboard/templates/${theirs.templateId}`,
    '/dashboard/outbox/99999999999',
    '/dashboard/templates/2147483648',
  ]
  const actions = () => [
    `/dashboard/connections/${theirs.connectionId}`,
    `/dashboard/connections/${theirs.connectionId}/disable`,
    `/dashboard/connections/${theirs.connectionId}/enable`,
    `/dashboard/connections/${theirs.connectionId}/pause`,
    `/dashboard/connections/${theirs.connectionId}/resume`,
    `/dashboard/connections/${theirs.connectionId}/delete`,
    `/dashboard/connections/${theirs.connectionId}/mailbox`,
    `/dashboard/connections/${theirs.connectionId}/mailbox-clear`,
    `/dashboard/keys/${theirs.keyId}/rotate`,
    `/dashboard/keys/${theirs.keyId}/revoke`,
    `/dashboard/keys/${theirs.keyId}/scope`,
    `/dashboard/batches/${theirs.batchId}/retry`,
    `/dashboard/batches/${theirs.batchId}/delete`,
    `/dashboard/audiences/${theirs.audienceId}`,
    `/dashboard/audiences/${theirs.audienceId}/delete`,
    `/dashboard/audiences/${theirs.audienceId}/members`,
    `/dashboard/audiences/${theirs.audienceId}/members/${theirs.memberId}/delete`,
    `/dashboard/templates/${theirs.templateId}`,
    `/dashboard/templates/${theirs.templateId}/preview`,
    `/dashboard/templates/${theirs.templateId}/delete`,
  ]

  it('answer 404 on every page', async () => {
    for (const path of pages()) {
      const page = await mine.browser.get(path)
      expect([path, page.status]).toEqual([path, 404])
      expect(textOf(page.html)).toContain('There is nothing at this address on your account.')
      expect(page.html).not.toContain('&lt;script&gt;')
    }
  })

  it('answer 404 on every action, and change nothing', async () => {
    for (const path of actions()) {
      const page = await mine.browser.post(path, { name: 'mine now', lines: 'x@example.com', minutes: '5' })
      expect([path, page.status]).toEqual([path, 404])
    }
    const sql = app.services.sql
    const [connection] =
      await sql`select disabled, paused_until from connections where id = ${theirs.connectionId}`
    expect(connection).toEqual({ disabled: false, paused_until: null })
    const [key] = await sql`select revoked_at from api_keys where id = ${theirs.keyId}`
    expect(key?.revoked_at).toBeNull()
    const [counts] = await sql`
      select (select count(*)::int from batches where id = ${theirs.batchId}) as batches,
             (select count(*)::int from audience_members where audience_id = ${theirs.audienceId}) as members,
             (select count(*)::int from templates where id = ${theirs.templateId}) as templates`
    expect(counts).toEqual({ batches: 1, members: 1, templates: 1 })
  })

  it('a key cannot be scoped to another account’s connection', async () => {
    await mine.browser.post('/dashboard/keys', { name: 'mine' })
    const [key] = await app.services.sql<
      { id: number }[]
    >`select id from api_keys where account_id = ${mine.accountId}`
    await mine.browser.get('/dashboard/keys')
    const page = await mine.browser.post(`/dashboard/keys/${key?.id}/scope`, {
      connection: String(theirs.connectionId),
    })
    expect(page.status).toBe(404)
    const [after] = await app.services.sql`select connection_id from api_keys where id = ${key?.id as number}`
    expect(after?.connection_id).toBeNull()
  })
})
