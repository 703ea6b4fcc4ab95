import { describe, expect, it } from 'vitest'
import { pauseConnection } from '../../src/connections/connections.ts'
import { useTestApp } from '../support/app.ts'
import { createdBatch } from '../support/batches.ts'
import { email, postEnqueue } from '../support/queue.ts'
import { startSender } from '../support/sending.ts'

/** The value of one sample of the exposition text, or undefined when it is absent. */
function sample(
  text: string,
  name: string,
  labels: Record<string, string | number> = {},
): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`)
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!match || match[1] !== name) continue
    const have = (match[2] ?? '').split(',').filter(Boolean)
    if (wanted.every((w) => have.includes(w)) && have.length === wanted.length) return Number(match[3])
  }
  return undefined
}

describe('GET /metrics without a token', () => {
  const app = useTestApp()

  async function scrape(): Promise<string> {
    const res = await app.requestRoot('/metrics')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    return res.text()
  }

  it('counts requests by route and status, with a latency histogram', async () => {
    const sender = await startSender(app, 'counted')
    const body = { to: 'a@example.com', subject: 's', text_body: 't' }
    await app.request('/send', { key: sender.key, body })
    await app.request('/send', { key: sender.key, body })
    await app.request('/send', { key: sender.key, body: { to: 'not an address' } })
    const text = await scrape()
    expect(
      sample(text, 'mailroom_http_requests_total', { method: 'POST', route: '/v1/send', status: 200 }),
    ).toBe(2)
    expect(
      sample(text, 'mailroom_http_requests_total', { method: 'POST', route: '/v1/send', status: 400 }),
    ).toBe(1)
    expect(
      sample(text, 'mailroom_http_request_duration_seconds_count', { method: 'POST', route: '/v1/send' }),
    ).toBe(3)
    expect(
      sample(text, 'mailroom_http_request_duration_seconds_bucket', {
        le: '+Inf',
        method: 'POST',
        route: '/v1/send',
      }),
    ).toBe(3)
  })

  it('counts emails by outcome and connection: sent, failed, deferred', async () => {
    const sender = await startSender(app, 'outcomes', {
      plan: 'pro',
      behaviour: { rejectRecipients: ['refused@example.com'] },
    })
    await app.request('/send', {
      key: sender.key,
      body: { to: 'ok@example.com', subject: 's', text_body: 't' },
    })
    await app.request('/send', {
      key: sender.key,
      body: { to: 'refused@example.com', subject: 's', text_body: 't' },
    })
    const labels = (outcome: string) => ({ connection: sender.connectionId, outcome })
    let text = await scrape()
    expect(sample(text, 'mailroom_emails_total', labels('sent'))).toBe(1)
    expect(sample(text, 'mailroom_emails_total', labels('failed'))).toBe(1)

    // Queued mail the server turns away for now is deferred, then sent.
    sender.sink.setBehaviour({ rejectData: { code: 451, message: '4.3.0 Try again later' } })
    await postEnqueue(app, sender.key, email())
    await app.worker()
    for (
      let i = 0;
      i < 300 && sample(await scrape(), 'mailroom_emails_total', labels('deferred')) === undefined;
      i++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    sender.sink.setBehaviour({ rejectData: undefined })
    await sender.sink.waitForMessages(2, 15_000)
    for (let i = 0; i < 300 && sample(await scrape(), 'mailroom_emails_total', labels('sent')) !== 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    text = await scrape()
    expect(sample(text, 'mailroom_emails_total', labels('deferred'))).toBeGreaterThanOrEqual(1)
    expect(sample(text, 'mailroom_emails_total', labels('sent'))).toBe(2)
    await app.stopWorkers()
  })

  it('reports the queue depth, the oldest queued age, connections by state and batches running', async () => {
    const before = await scrape()
    const sender = await startSender(app, 'gauges', { plan: 'pro' })
    await pauseConnection(app.services.sql, sender.connectionId)
    // Paused: the mail is accepted and waits (no worker runs here anyway).
    await postEnqueue(app, sender.key, email())
    await postEnqueue(app, sender.key, email())
    await createdBatch(app, sender.key, {
      template: { subject: 's', text_body: 't' },
      recipients: ['b1@example.com', 'b2@example.com'],
    })
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const text = await scrape()
    expect(sample(text, 'mailroom_queue_depth')).toBe((sample(before, 'mailroom_queue_depth') ?? 0) + 4)
    expect(sample(text, 'mailroom_queue_oldest_age_seconds')).toBeGreaterThanOrEqual(1)
    expect(sample(text, 'mailroom_connections', { state: 'paused' })).toBe(
      (sample(before, 'mailroom_connections', { state: 'paused' }) ?? 0) + 1,
    )
    expect(sample(text, 'mailroom_connections', { state: 'active' })).toBeGreaterThanOrEqual(1)
    expect(sample(text, 'mailroom_batches_running')).toBe(
      (sample(before, 'mailroom_batches_running') ?? 0) + 1,
    )
  })
})

describe('GET /metrics with MAILROOM_METRICS_TOKEN', () => {
  const app = useTestApp({ metricsToken: 'scrape-token-1234' })

  it.each([
    [undefined, 401],
    ['Bearer wrong-token', 401],
    ['scrape-token-1234', 401],
    ['Bearer scrape-token-1234', 200],
  ])('Authorization %j answers %i', async (authorization, status) => {
    const res = await app.requestRoot('/metrics', authorization ? { headers: { authorization } } : {})
    expect(res.status).toBe(status)
    if (status === 200) expect(await res.text()).toContain('mailroom_http_requests_total')
  })
})
