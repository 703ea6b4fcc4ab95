/**
 * The /webhooks operations: create with the secret shown once, list, get,
 * update, rotate, delete; another account's endpoints answer 404; URLs on private addresses are
 * refused unless allowed (at registration and on every delivery); the body rules.
 */
import { describe, expect, it } from 'vitest'
import { WebhookEventTypeSchema } from '../../../src/generated/routes.ts'
import { postWebhook } from '../../../src/net/webhook-post.ts'
import { seedAccount, startTestApp, useTestApp } from '../../support/app.ts'

const app = useTestApp()

/** A response body, read loosely: the tests compare it whole. */
// biome-ignore lint/suspicious/noExplicitAny: bodies of several shapes, checked by toEqual
type Body = Record<string, any>

async function call(key: string, path: string, init: { method?: string; body?: unknown } = {}) {
  const res = await app.request(path, { key, ...init })
  return { status: res.status, body: (await res.json()) as Body }
}

const URL_OK = 'http://127.0.0.1:9/hooks'

describe('webhook endpoints', () => {
  it('are created with a secret shown once, then listed, read, changed, rotated and deleted', async () => {
    const { key } = await seedAccount(app, { plan: 'free' })
    const created = await call(key, '/webhooks', {
      method: 'POST',
      body: { url: URL_OK, events: ['email.sent', 'email.sent', 'form.submitted'], description: 'Orders' },
    })
    expect(created.status).toBe(201)
    expect(created.body).toEqual({
      success: true,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      webhook: {
        id: expect.any(Number),
        url: URL_OK,
        description: 'Orders',
        events: ['email.sent', 'form.submitted'],
        enabled: true,
        disabled_reason: null,
        failing_since: null,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/),
        updated_at: expect.any(String),
      },
    })
    const { id } = created.body.webhook
    const [stored] = await app.services.sql<{ secret_sealed: string }[]>`
      select secret_sealed from webhook_endpoints where id = ${id}`
    expect(stored?.secret_sealed).toMatch(/^v1\./)
    expect(stored?.secret_sealed).not.toContain(created.body.secret.slice(6))

    expect((await call(key, '/webhooks')).body).toEqual({ success: true, webhooks: [created.body.webhook] })
    const read = await call(key, `/webhooks/${id}`)
    expect(read.body).toEqual({ success: true, webhook: created.body.webhook })
    expect(JSON.stringify(read.body)).not.toContain('whsec_')

    const disabled = await call(key, `/webhooks/${id}`, {
      method: 'PUT',
      body: { enabled: false, events: ['batch.failed'] },
    })
    expect(disabled.body.webhook).toMatchObject({
      enabled: false,
      disabled_reason: 'Disabled by its owner',
      events: ['batch.failed'],
      url: URL_OK,
      description: 'Orders',
    })
    const enabled = await call(key, `/webhooks/${id}`, { method: 'PUT', body: { enabled: true } })
    expect(enabled.body.webhook).toMatchObject({ enabled: true, disabled_reason: null })

    const rotated = await call(key, `/webhooks/${id}/rotate-secret`, { method: 'POST' })
    expect(rotated.status).toBe(200)
    expect(rotated.body.secret).toMatch(/^whsec_/)
    expect(rotated.body.secret).not.toBe(created.body.secret)

    expect(await call(key, `/webhooks/${id}/deliveries`)).toEqual({
      status: 200,
      body: { success: true, deliveries: [] },
    })
    expect(await call(key, `/webhooks/${id}`, { method: 'DELETE' })).toEqual({
      status: 200,
      body: { success: true, message: 'Webhook endpoint deleted' },
    })
    expect((await call(key, `/webhooks/${id}`)).status).toBe(404)
  })

  it("another account's endpoints answer 404 WEBHOOK_NOT_FOUND on every operation", async () => {
    const owner = await seedAccount(app, { plan: 'pro' })
    const other = await seedAccount(app, { plan: 'pro' })
    const created = await call(owner.key, '/webhooks', {
      method: 'POST',
      body: { url: URL_OK, events: ['email.sent'] },
    })
    const id = created.body.webhook.id
    const attempts = [
      call(other.key, `/webhooks/${id}`),
      call(other.key, `/webhooks/${id}`, { method: 'PUT', body: { enabled: false } }),
      call(other.key, `/webhooks/${id}`, { method: 'DELETE' }),
      call(other.key, `/webhooks/${id}/rotate-secret`, { method: 'POST' }),
      call(other.key, `/webhooks/${id}/deliveries`),
      call(other.key, '/webhooks/2147483648'),
    ]
    for (const answer of await Promise.all(attempts)) {
      expect(answer).toEqual({
        status: 404,
        body: {
          code: 'WEBHOOK_NOT_FOUND',
          message: expect.stringMatching(/^Webhook endpoint \d+ not found$/),
        },
      })
    }
    expect((await call(other.key, '/webhooks')).body.webhooks).toEqual([])
    expect((await call(owner.key, `/webhooks/${id}`)).body.webhook.enabled).toBe(true)
    expect((await call(owner.key, '/webhooks/abc')).body.code).toBe('INVALID_ID')
  })

  it('refuse bodies outside the contract with the validation body, and URLs that are not http(s)', async () => {
    const { key } = await seedAccount(app)
    for (const body of [
      { url: URL_OK },
      { url: URL_OK, events: [] },
      { url: URL_OK, events: ['email.opened'] },
      { url: URL_OK, events: ['email.sent'], description: 'x'.repeat(256) },
      { url: `http://127.0.0.1/${'x'.repeat(2000)}`, events: ['email.sent'] },
      { events: ['email.sent'] },
    ]) {
      const answer = await call(key, '/webhooks', { method: 'POST', body })
      expect(answer.status, JSON.stringify(body).slice(0, 80)).toBe(400)
      expect(answer.body.error?.name).toBe('ZodError')
    }
    for (const url of ['ftp://example.com/x', 'not a url', 'javascript:alert(1)']) {
      const answer = await call(key, '/webhooks', { method: 'POST', body: { url, events: ['email.sent'] } })
      expect(answer).toEqual({
        status: 400,
        body: { code: 'INVALID_WEBHOOK_URL', message: expect.any(String) },
      })
    }
  })

  it('subscribe to every event type at once, and to no more entries than there are types', async () => {
    const { key } = await seedAccount(app)
    const every = WebhookEventTypeSchema.options
    const all = await call(key, '/webhooks', { method: 'POST', body: { url: URL_OK, events: every } })
    expect(all.status).toBe(201)
    expect(all.body.webhook.events).toEqual(every)
    const more = await call(key, '/webhooks', {
      method: 'POST',
      body: { url: URL_OK, events: [...every, 'email.sent'] },
    })
    expect(more.status).toBe(400)
    expect(more.body.error?.name).toBe('ZodError')
  })

  it('are at most 10 per account', async () => {
    const { key } = await seedAccount(app)
    for (let i = 0; i < 10; i++) {
      expect(
        (await call(key, '/webhooks', { method: 'POST', body: { url: URL_OK, events: ['email.sent'] } }))
          .status,
      ).toBe(201)
    }
    const eleventh = await call(key, '/webhooks', {
      method: 'POST',
      body: { url: URL_OK, events: ['email.sent'] },
    })
    expect(eleventh).toEqual({
      status: 403,
      body: { code: 'WEBHOOK_LIMIT_REACHED', message: expect.any(String), details: { limit: 10, used: 10 } },
    })
  })
})

describe('private webhook addresses', () => {
  it('are refused unless MAILROOM_ALLOW_PRIVATE_WEBHOOK_URLS is set, by address and by name', async () => {
    const strict = await startTestApp({ allowPrivateWebhookUrls: false })
    try {
      const { key } = await seedAccount(strict)
      for (const url of [
        'http://127.0.0.1:8080/x',
        'https://10.1.2.3/x',
        'http://[::1]/x',
        'http://localhost/x',
        'http://169.254.169.254/latest',
      ]) {
        const res = await strict.request('/webhooks', {
          method: 'POST',
          key,
          body: { url, events: ['email.sent'] },
        })
        expect(res.status, url).toBe(400)
        const body = (await res.json()) as { code: string; message: string }
        expect(body.code).toBe('INVALID_WEBHOOK_URL')
        expect(body.message).toContain('MAILROOM_ALLOW_PRIVATE_WEBHOOK_URLS')
      }
      const [row] = await strict.db.sql<{ n: number }[]>`select count(*)::int as n from webhook_endpoints`
      expect(row?.n).toBe(0)
    } finally {
      await strict.close()
    }
  })

  it('are checked again on every delivery, since DNS may have changed', async () => {
    const outcome = await postWebhook(
      'http://localhost:9/x',
      '{}',
      {},
      { timeoutMs: 2_000, allowPrivate: false },
    )
    expect(outcome).toEqual({ status: null, error: expect.stringContaining('resolves to a private address') })
  })
})
