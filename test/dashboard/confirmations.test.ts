/**
 * Actions that cannot be undone ask first, on a page of their own that the server renders (it
 * works without a script): rotating or revoking an API key, rotating a webhook's secret,
 * deleting a webhook endpoint or an audience's member, as deleting a connection does. Showing
 * the question changes nothing; its button does the action.
 */
import { describe, expect, it } from 'vitest'
import { authenticate } from '../../src/keys/keys.ts'
import { useTestApp } from '../support/app.ts'
import { type Client, expectRedirect, type Page, signedIn, textOf } from '../support/dashboard.ts'

const app = useTestApp()
const HOSTILE = '<script>alert(1)</script>'

/** The page links to `path` and has no form that posts to it: one click only asks. */
function asksFirst(list: Page, path: string): void {
  expect(list.html).toContain(`href="${path}"`)
  expect(list.html).not.toContain(`action="${path}"`)
}

/** The confirmation page: a plain form that posts the action with the form token, and a way back. */
async function confirmation(browser: Client, path: string, back: string): Promise<string> {
  const page = await browser.get(path)
  expect(page.status).toBe(200)
  expect(page.html).toMatch(
    new RegExp(`<form method="post" action="${path}"[^>]*><input type="hidden" name="csrf" value="[^"]+"/>`),
  )
  expect(page.html).toContain(`href="${back}"`)
  expect(page.html).not.toContain(HOSTILE)
  return textOf(page.html)
}

async function newKey(browser: Client, accountId: number) {
  const created = await browser.post('/dashboard/keys', { name: `Key ${HOSTILE}` })
  const secret = /id="new-key"[^>]*value="(mr_[^"]+)"/.exec(created.html)?.[1] as string
  const [row] = await app.services.sql<{ id: number }[]>`
    select id from api_keys where account_id = ${accountId} order by id desc limit 1`
  return { id: row?.id as number, secret }
}

describe('API keys', () => {
  it('rotate only once the question is answered; the old secret works until then', async () => {
    const { browser, account } = await signedIn(app)
    const key = await newKey(browser, account.id)
    const path = `/dashboard/keys/${key.id}/rotate`
    asksFirst(await browser.get('/dashboard/keys'), path)
    const text = await confirmation(browser, path, '/dashboard/keys')
    expect(text).toContain(`Rotate the secret of “Key ${HOSTILE}”?`)
    expect(text).toContain('Its current secret stops working at once')
    expect(await authenticate(app.services.sql, key.secret)).toBeDefined()
    const rotated = await browser.post(path)
    expect(textOf(rotated.html)).toContain('The old secret has stopped working.')
    expect(await authenticate(app.services.sql, key.secret)).toBeUndefined()
  })

  it('are revoked only once the question is answered', async () => {
    const { browser, account } = await signedIn(app)
    const key = await newKey(browser, account.id)
    const path = `/dashboard/keys/${key.id}/revoke`
    asksFirst(await browser.get('/dashboard/keys'), path)
    expect(await confirmation(browser, path, '/dashboard/keys')).toContain(`Revoke “Key ${HOSTILE}”?`)
    expect(await authenticate(app.services.sql, key.secret)).toBeDefined()
    expectRedirect(await browser.post(path), '/dashboard/keys')
    expect(await authenticate(app.services.sql, key.secret)).toBeUndefined()
  })
})

describe('webhook endpoints', () => {
  it('are deleted, and their secret rotated, only once the question is answered', async () => {
    const { browser, account } = await signedIn(app)
    await browser.get('/dashboard/webhooks')
    await browser.post('/dashboard/webhooks', { url: 'http://127.0.0.1:9/hook', 'event:email.sent': '1' })
    const [endpoint] = await app.services.sql<{ id: number; secret_sealed: string }[]>`
      select id, secret_sealed from webhook_endpoints where account_id = ${account.id}`
    const id = endpoint?.id as number
    const own = `/dashboard/webhooks/${id}`
    const shown = await browser.get(own)
    asksFirst(shown, `${own}/rotate`)
    asksFirst(shown, `${own}/delete`)
    expect(await confirmation(browser, `${own}/rotate`, own)).toContain(
      'Rotate the signing secret of http://127.0.0.1:9/hook?',
    )
    expect(await confirmation(browser, `${own}/delete`, own)).toContain(
      'Delete the endpoint http://127.0.0.1:9/hook?',
    )
    const [still] = await app.services.sql`select secret_sealed from webhook_endpoints where id = ${id}`
    expect(still?.secret_sealed).toBe(endpoint?.secret_sealed)
    expectRedirect(await browser.post(`${own}/delete`), '/dashboard/webhooks')
    expect((await browser.get(own)).status).toBe(404)
  })
})

describe('audience members', () => {
  it('are deleted only once the question, which names the address, is answered', async () => {
    const { browser, account } = await signedIn(app, { plan: 'pro' })
    await browser.get('/dashboard/audiences')
    expectRedirect(
      await browser.post('/dashboard/audiences', { name: `List ${HOSTILE}` }),
      '/dashboard/audiences',
    )
    const [audience] = await app.services.sql<{ id: number }[]>`
      select id from audiences where account_id = ${account.id}`
    const audienceId = audience?.id as number
    const own = `/dashboard/audiences/${audienceId}`
    await browser.get(own)
    await browser.post(`${own}/members`, { lines: 'ann@example.com\nbob@example.com' })
    const [ann] = await app.services.sql<{ id: number }[]>`
      select id from audience_members where audience_id = ${audienceId} and email = 'ann@example.com'`
    const path = `${own}/members/${ann?.id}/delete`
    asksFirst(await browser.get(own), path)
    expect(await confirmation(browser, path, own)).toContain(`Delete ann@example.com from “List ${HOSTILE}”?`)
    const count = async () =>
      (await app.services.sql`select email from audience_members where audience_id = ${audienceId}`).map(
        (m) => m.email,
      )
    expect(await count()).toEqual(['ann@example.com', 'bob@example.com'])
    expectRedirect(await browser.post(path), own)
    expect(textOf((await browser.get(own)).html)).toContain(`ann@example.com deleted from “List ${HOSTILE}”.`)
    expect(await count()).toEqual(['bob@example.com'])
    expect((await browser.get(path)).status).toBe(404)
  })

  it('of another account, or of another audience, answer 404 and are asked nothing about', async () => {
    const owner = await signedIn(app, { plan: 'pro' })
    const other = await signedIn(app, { plan: 'pro' })
    await owner.browser.post('/dashboard/audiences', { name: 'Mine' })
    await owner.browser.post('/dashboard/audiences', { name: 'Also mine' })
    const audiences = await app.services.sql<{ id: number }[]>`
      select id from audiences where account_id = ${owner.account.id} order by id`
    const [first, second] = audiences.map((a) => a.id) as [number, number]
    await owner.browser.post(`/dashboard/audiences/${first}/members`, { lines: 'kept@example.com' })
    const [row] = await app.services.sql<{ id: number }[]>`
      select id from audience_members where audience_id = ${first}`
    const member = row?.id as number
    for (const [browser, path] of [
      [other.browser, `/dashboard/audiences/${first}/members/${member}/delete`],
      [owner.browser, `/dashboard/audiences/${second}/members/${member}/delete`],
    ] as const) {
      expect((await browser.get(path)).status).toBe(404)
      expect((await browser.post(path)).status).toBe(404)
    }
    expect(await app.services.sql`select id from audience_members where id = ${member}`).toHaveLength(1)
  })
})
