import { describe, expect, it } from 'vitest'
import { authenticate } from '../../src/keys/keys.ts'
import { useTestApp } from '../support/app.ts'
import { expectRedirect, signedIn, textOf } from '../support/dashboard.ts'
import { ESCAPED, HOSTILE } from '../support/dashboard-pages.ts'

const app = useTestApp()

describe('keys', () => {
  it('shows a new key once; rotating shows the new secret and the old one stops working; revoking ends it', async () => {
    const { browser, account } = await signedIn(app, { plan: 'pro' })
    await browser.get('/dashboard/keys')
    const created = await browser.post('/dashboard/keys', { name: HOSTILE, expires_in_days: '30' })
    expect(created.status).toBe(200)
    const secret = /id="new-key"[^>]*value="(mr_[^"]+)"/.exec(created.html)?.[1] as string
    expect(await authenticate(app.services.sql, secret)).toMatchObject({ accountId: account.id })
    expect(created.html).toContain(ESCAPED)
    const list = await browser.get('/dashboard/keys')
    expect(list.html).not.toContain(secret)
    expect(list.html).toContain(secret.slice(0, 9))
    const [row] = await app.services.sql<
      { id: number }[]
    >`select id from api_keys where account_id = ${account.id}`
    const rotated = await browser.post(`/dashboard/keys/${row?.id}/rotate`)
    const fresh = /id="new-key"[^>]*value="(mr_[^"]+)"/.exec(rotated.html)?.[1] as string
    expect(fresh).not.toBe(secret)
    expect(await authenticate(app.services.sql, secret)).toBeUndefined()
    expect(await authenticate(app.services.sql, fresh)).toBeDefined()
    expectRedirect(await browser.post(`/dashboard/keys/${row?.id}/revoke`), '/dashboard/keys')
    expect(await authenticate(app.services.sql, fresh)).toBeUndefined()
    expect(textOf((await browser.get('/dashboard/keys')).html)).toContain('revoked')
  })
})
