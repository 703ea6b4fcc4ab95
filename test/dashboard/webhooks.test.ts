/**
 * The dashboard's Webhooks page: add an endpoint (its secret shown once),
 * change its events, disable and enable it, rotate the secret, see its recent deliveries with
 * status and answer, send one again (same webhook-id), delete it; another account's endpoint
 * answers 404.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { expectRedirect, signedIn, textOf } from '../support/dashboard.ts'
import { waitFor } from '../support/queue.ts'
import { postSend, startSender } from '../support/sending.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts'

const app = useTestApp()
const receivers: WebhookReceiver[] = []
afterAll(async () => {
  await app.stopWorkers()
  await Promise.all(receivers.map((r) => r.close()))
})

const ALL = {
  'event:email.sent': '1',
  'event:email.failed': '1',
}

describe('the Webhooks page', () => {
  it('adds an endpoint and shows its secret once, then edits, disables, rotates and deletes it', async () => {
    const { browser, account } = await signedIn(app)
    const list = await browser.get('/dashboard/webhooks')
    expect(list.status).toBe(200)
    expect(list.html).toContain('href="/dashboard/webhooks"')
    const created = await browser.post('/dashboard/webhooks', {
      url: 'http://127.0.0.1:9/x',
      description: 'Orders',
      ...ALL,
    })
    expect(created.status).toBe(200)
    const secret = /value="(whsec_[^"]+)"/.exec(created.html)?.[1]
    expect(secret).toMatch(/^whsec_/)
    expect(textOf(created.html)).toContain('this is the only time it is shown')
    const [endpoint] = await app.services.sql<{ id: number; events: string[] }[]>`
      select id, events from webhook_endpoints where account_id = ${account.id}`
    expect(endpoint?.events).toEqual(['email.sent', 'email.failed'])
    const id = endpoint?.id as number
    const shown = await browser.get(`/dashboard/webhooks/${id}`)
    expect(shown.html).not.toContain(secret)

    const saved = await browser.post(`/dashboard/webhooks/${id}`, {
      url: 'http://127.0.0.1:9/y',
      description: 'Orders',
      'event:batch.completed': '1',
    })
    expectRedirect(saved, `/dashboard/webhooks/${id}`)
    const after = await browser.get(`/dashboard/webhooks/${id}`)
    expect(textOf(after.html)).toContain('Endpoint saved.')
    expect(textOf(after.html)).toContain('disabled Disabled by its owner')
    const [row] = await app.services.sql`select url, events, enabled from webhook_endpoints where id = ${id}`
    expect(row).toEqual({ url: 'http://127.0.0.1:9/y', events: ['batch.completed'], enabled: false })

    const none = await browser.post(`/dashboard/webhooks/${id}`, {
      url: 'http://127.0.0.1:9/y',
      enabled: '1',
    })
    expect(none.status).toBe(400)
    expect(textOf(none.html)).toContain('Choose at least one event')

    const rotated = await browser.post(`/dashboard/webhooks/${id}/rotate`)
    const newSecret = /value="(whsec_[^"]+)"/.exec(rotated.html)?.[1]
    expect(newSecret).toMatch(/^whsec_/)
    expect(newSecret).not.toBe(secret)

    await browser.get(`/dashboard/webhooks/${id}`)
    expectRedirect(await browser.post(`/dashboard/webhooks/${id}/delete`), '/dashboard/webhooks')
    expect((await browser.get(`/dashboard/webhooks/${id}`)).status).toBe(404)
  })

  it('refuses a URL that is not http(s) with a readable message', async () => {
    const { browser } = await signedIn(app)
    await browser.get('/dashboard/webhooks')
    const refused = await browser.post('/dashboard/webhooks', { url: 'ftp://example.com/x', ...ALL })
    expect(refused.status).toBe(400)
    expect(textOf(refused.html)).toContain('A webhook URL starts with https:// or http://')
  })

  it("shows an endpoint's deliveries with status and answer, and sends one again with the same webhook-id", async () => {
    const s = await startSender(app, 'dashhook')
    const receiver = await startWebhookReceiver((n) => (n === 0 ? 500 : 200))
    receivers.push(receiver)
    const res = await app.request('/webhooks', {
      method: 'POST',
      key: s.key,
      body: { url: receiver.url, events: ['email.sent'] },
    })
    const { webhook } = (await res.json()) as { webhook: { id: number } }
    await app.worker({
      webhooks: { timeoutMs: 1_000, retryDelaysMs: [], disableAfterMs: 86_400_000, lanes: 1 },
    })
    await postSend(app, s.key, { to: 'ann@example.com', subject: 'Hi', text_body: 'x' })
    await waitFor('the failed delivery', async () => {
      const [d] = await app.services
        .sql`select status from webhook_deliveries where endpoint_id = ${webhook.id}`
      return d?.status === 'failed' ? true : undefined
    })
    const account = await app.services.sql<
      { id: number }[]
    >`select account_id as id from webhook_endpoints where id = ${webhook.id}`
    const { browser } = await signedIn(app, {
      account: { id: account[0]?.id as number } as never,
    })
    const page = await browser.get(`/dashboard/webhooks/${webhook.id}`)
    expect(textOf(page.html)).toMatch(
      /email\.sent msg_[0-9a-f]{32} failed 1 HTTP 500 The endpoint answered HTTP 500/,
    )
    const delivery = /deliveries\/(\d+)\/again/.exec(page.html)?.[1]
    expectRedirect(
      await browser.post(`/dashboard/webhooks/${webhook.id}/deliveries/${delivery}/again`),
      `/dashboard/webhooks/${webhook.id}`,
    )
    await waitFor('the second attempt', () => (receiver.received.length >= 2 ? true : undefined))
    expect(receiver.received[1]?.headers['webhook-id']).toBe(receiver.received[0]?.headers['webhook-id'])
    await waitFor('delivered', async () => {
      const text = textOf((await browser.get(`/dashboard/webhooks/${webhook.id}`)).html)
      return /delivered 1 HTTP 200/.test(text) ? true : undefined
    })
  })

  it("answers 404 for another account's endpoint, on its page and every action", async () => {
    const owner = await signedIn(app)
    await owner.browser.get('/dashboard/webhooks')
    await owner.browser.post('/dashboard/webhooks', { url: 'http://127.0.0.1:9/x', ...ALL })
    const [theirs] = await app.services.sql<{ id: number }[]>`
      select id from webhook_endpoints where account_id = ${owner.account.id}`
    const id = theirs?.id as number
    const { browser } = await signedIn(app)
    expect((await browser.get(`/dashboard/webhooks/${id}`)).status).toBe(404)
    for (const action of ['', '/rotate', '/delete', '/deliveries/1/again']) {
      const page = await browser.post(`/dashboard/webhooks/${id}${action}`, {
        url: 'http://127.0.0.1:9/z',
        ...ALL,
      })
      expect([action, page.status]).toEqual([action, 404])
    }
    const [row] = await app.services.sql`select url from webhook_endpoints where id = ${id}`
    expect(row?.url).toBe('http://127.0.0.1:9/x')
  })
})
