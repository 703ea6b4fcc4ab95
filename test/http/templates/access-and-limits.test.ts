import { describe, expect, it } from 'vitest'
import type { Template } from '../../../src/templates/templates.ts'
import { type SeededAccount, seedAccount, useTestApp } from '../../support/app.ts'
import { humanText } from '../../support/matchers.ts'
import { content, statusAndBody, templateRequests } from '../../support/templates.ts'

const app = useTestApp()
const { create, get, put, createOk, expectCreated } = templateRequests(app)

describe('unknown template IDs', () => {
  it.each(['GET', 'PUT', 'DELETE'])(
    '%s /templates/{id} of an ID that does not exist answers 404 {error}',
    async (method) => {
      const owner = await seedAccount(app)
      const created = await createOk(owner)
      await app.request(`/templates/${created.id}`, { method: 'DELETE', key: owner.key })
      for (const id of [created.id, 2147483647, 99999999999, '9007199254740993']) {
        const response = await app.request(`/templates/${id}`, {
          method,
          key: owner.key,
          ...(method === 'PUT' ? { body: { name: 'x' } } : {}),
        })
        expect(await statusAndBody(response), `id ${id}`).toEqual({ status: 404, body: { error: humanText } })
      }
    },
  )
})

describe('another account’s template', () => {
  const ACCESS_DENIED = { status: 403, body: { error: 'Access denied' } }

  /** A template of `owner`, and an `intruder`: another account with a key of its own. */
  async function ownerAndIntruder() {
    const owner = await seedAccount(app)
    const intruder = await seedAccount(app)
    const created = await createOk(owner)
    return { owner, intruder, created }
  }

  /** `owner` still reads `created` as it was. */
  async function expectUnchanged(owner: SeededAccount, created: Template) {
    const read = await get(owner, created.id)
    expect(await statusAndBody(read)).toEqual({ status: 200, body: { success: true, template: created } })
  }

  it('GET answers 403 {error: "Access denied"}', async () => {
    const { intruder, created } = await ownerAndIntruder()
    const response = await get(intruder, created.id)
    expect(await statusAndBody(response)).toEqual(ACCESS_DENIED)
  })

  it('PUT answers 403 {error: "Access denied"} and the template is not modified', async () => {
    const { owner, intruder, created } = await ownerAndIntruder()
    const response = await put(intruder, created.id, { name: 'Hijacked', subject: 'Hijacked' })
    expect(await statusAndBody(response)).toEqual(ACCESS_DENIED)
    await expectUnchanged(owner, created)
  })

  it('DELETE answers 403 {error: "Access denied"} and the template is not deleted', async () => {
    const { owner, intruder, created } = await ownerAndIntruder()
    const response = await app.request(`/templates/${created.id}`, { method: 'DELETE', key: intruder.key })
    expect(await statusAndBody(response)).toEqual(ACCESS_DENIED)
    await expectUnchanged(owner, created)
  })

  it('GET /templates lists only the caller’s templates', async () => {
    const owner = await seedAccount(app)
    const other = await seedAccount(app)
    const mine = await createOk(owner)
    const theirs = await createOk(other, { ...content, name: 'Theirs' })
    const response = await app.request('/templates', { key: owner.key })
    expect(await statusAndBody(response)).toEqual({ status: 200, body: { success: true, templates: [mine] } })
    const otherList = await app.request('/templates', { key: other.key })
    expect(await otherList.json()).toEqual({ success: true, templates: [theirs] })
  })
})

describe('plan template limits', () => {
  it('Free: 3 templates are accepted, the 4th answers 403 Template limit reached', async () => {
    const owner = await seedAccount(app, { plan: 'free' })
    for (let i = 1; i <= 3; i++) await createOk(owner, { ...content, name: `Template ${i}` })
    const response = await create(owner, { ...content, name: 'Template 4' })
    expect(await statusAndBody(response)).toEqual({
      status: 403,
      body: { error: 'Template limit reached', limit: 3, used: 3, upgradeRequired: true, message: humanText },
    })
    const list = await app.request('/templates', { key: owner.key })
    expect((await list.json()).templates).toHaveLength(3)
  })

  it('Free: after deleting one of the 3, creating works again (and the next one is refused)', async () => {
    const owner = await seedAccount(app, { plan: 'free' })
    const made: Template[] = []
    for (let i = 1; i <= 3; i++) made.push(await createOk(owner, { ...content, name: `Template ${i}` }))
    expect((await create(owner)).status).toBe(403)
    const deleted = await app.request(`/templates/${made[0]?.id}`, { method: 'DELETE', key: owner.key })
    expect(deleted.status).toBe(200)
    await expectCreated(owner, { ...content, name: 'Replacement' })
    expect(await statusAndBody(await create(owner))).toEqual({
      status: 403,
      body: { error: 'Template limit reached', limit: 3, used: 3, upgradeRequired: true, message: humanText },
    })
  })

  it('Free: concurrent creations never exceed 3 templates', async () => {
    const owner = await seedAccount(app, { plan: 'free' })
    await createOk(owner, { ...content, name: 'Template 1' })
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => create(owner, { ...content, name: `Racing ${i}` })),
    )
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 403, 403, 403, 403])
    const list = await app.request('/templates', { key: owner.key })
    expect((await list.json()).templates).toHaveLength(3)
  })

  it('Free: another account’s templates do not count toward the limit', async () => {
    const other = await seedAccount(app, { plan: 'free' })
    for (let i = 1; i <= 3; i++) await createOk(other, { ...content, name: `Theirs ${i}` })
    const owner = await seedAccount(app, { plan: 'free' })
    expect((await create(owner)).status).toBe(201)
  })

  it('Pro: a 4th and a 5th template are accepted', async () => {
    const owner = await seedAccount(app, { plan: 'pro' })
    for (let i = 1; i <= 5; i++) await expectCreated(owner, { ...content, name: `Template ${i}` })
    const list = await app.request('/templates', { key: owner.key })
    expect((await list.json()).templates).toHaveLength(5)
  })
})
