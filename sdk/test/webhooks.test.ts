/**
 * verifyWebhook: a delivery signed the Standard Webhooks way with the endpoint's secret and a
 * fresh timestamp is accepted and parsed; a forged, altered, unsigned or stale one is refused.
 * The signatures here are made with node:crypto, independently of the SDK's Web Crypto code.
 */
import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { verifyWebhook, WebhookVerificationError } from '../src/index.js'

const SECRET = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`
const BODY = JSON.stringify({
  type: 'email.sent',
  timestamp: '2025-01-15T09:30:00.000Z',
  data: { outbox_id: 1 },
})

function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
}

function headersAt(timestamp: number, signature = sign(SECRET, 'msg_1', timestamp, BODY)) {
  return { 'webhook-id': 'msg_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': signature }
}

const now = () => Math.floor(Date.now() / 1000)

describe('verifyWebhook', () => {
  it('accepts a valid delivery and returns its event, from a plain object or Headers, text or bytes', async () => {
    const headers = headersAt(now())
    await expect(verifyWebhook(BODY, headers, SECRET)).resolves.toEqual(JSON.parse(BODY))
    await expect(
      verifyWebhook(new TextEncoder().encode(BODY), new Headers(headers), SECRET),
    ).resolves.toEqual(JSON.parse(BODY))
    // Several signatures (a rotation in progress): one match is enough.
    const both = { ...headers, 'webhook-signature': `v1,${'A'.repeat(44)} ${headers['webhook-signature']}` }
    await expect(verifyWebhook(BODY, both, SECRET)).resolves.toBeTruthy()
    // Node's IncomingHttpHeaders may spell names in any case.
    const upper = {
      'Webhook-Id': 'msg_1',
      'Webhook-Timestamp': headers['webhook-timestamp'],
      'Webhook-Signature': headers['webhook-signature'],
    }
    await expect(verifyWebhook(BODY, upper, SECRET)).resolves.toBeTruthy()
  })

  it('refuses a forged signature, another secret, an altered body, id or timestamp', async () => {
    const t = now()
    const other = `whsec_${Buffer.from('another secret of 32 bytes, sure').toString('base64')}`
    const cases: [string | Uint8Array, Record<string, string>, string][] = [
      [BODY, headersAt(t, `v1,${Buffer.alloc(32).toString('base64')}`), SECRET],
      [BODY, headersAt(t, sign(other, 'msg_1', t, BODY)), SECRET],
      [BODY, headersAt(t), other],
      [BODY.replace('"outbox_id":1', '"outbox_id":2'), headersAt(t), SECRET],
      [BODY, { ...headersAt(t), 'webhook-id': 'msg_2' }, SECRET],
      [BODY, { ...headersAt(t), 'webhook-timestamp': String(t - 1) }, SECRET],
      [BODY, headersAt(t, sign(SECRET, 'msg_1', t, BODY).replace('v1,', 'v2,')), SECRET],
      [BODY, headersAt(t, 'v1,not base64!'), SECRET],
    ]
    for (const [body, headers, secret] of cases) {
      await expect(verifyWebhook(body, headers, secret)).rejects.toThrow(WebhookVerificationError)
    }
  })

  it('refuses a missing header', async () => {
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const headers: Record<string, string> = headersAt(now())
      delete headers[name]
      await expect(verifyWebhook(BODY, headers, SECRET)).rejects.toThrow(`The ${name} header is missing`)
    }
  })

  it('refuses a timestamp older or newer than the tolerance (300 s by default), signed or not', async () => {
    const t = now()
    await expect(verifyWebhook(BODY, headersAt(t - 301), SECRET)).rejects.toThrow(/more than 300 s away/)
    await expect(verifyWebhook(BODY, headersAt(t + 301), SECRET)).rejects.toThrow(/more than 300 s away/)
    await expect(verifyWebhook(BODY, headersAt(t - 290), SECRET)).resolves.toBeTruthy()
    await expect(verifyWebhook(BODY, headersAt(t - 60), SECRET, { toleranceSeconds: 30 })).rejects.toThrow(
      WebhookVerificationError,
    )
    const then = new Date('2025-01-15T09:30:00Z')
    const stamp = then.getTime() / 1000
    await expect(verifyWebhook(BODY, headersAt(stamp), SECRET, { now: then })).resolves.toBeTruthy()
    await expect(verifyWebhook(BODY, headersAt(stamp), SECRET)).rejects.toThrow(WebhookVerificationError)
    await expect(
      verifyWebhook(BODY, { ...headersAt(t), 'webhook-timestamp': 'soon' }, SECRET),
    ).rejects.toThrow('webhook-timestamp is not a Unix time')
  })
})
