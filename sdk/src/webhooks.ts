/**
 * Checking a webhook delivery from Mailroom (Standard Webhooks): the `webhook-signature` header
 * holds `v1,<base64>` signatures (space-separated) of `<webhook-id>.<webhook-timestamp>.<body>`,
 * HMAC-SHA256 keyed with the base64-decoded part of the endpoint's `whsec_` secret. Uses Web
 * Crypto, so it runs wherever `globalThis.crypto` does (Node 20, Deno, Bun, edge runtimes).
 */
import type { webhooks } from './generated/schema.js'

/** The body of any delivery (each event the contract's `webhooks` list); tell them apart by `type`. */
export type WebhookEvent = {
  [Event in keyof webhooks]: webhooks[Event]['post']['requestBody']['content']['application/json']
}[keyof webhooks]

/** Headers as a `Headers` object or a plain object (Node's `IncomingHttpHeaders`, any case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>

export interface VerifyWebhookOptions {
  /** How far `webhook-timestamp` may be from now, either way (default 300 s, the convention's). */
  toleranceSeconds?: number
  /** The time to check against (default: now). */
  now?: Date
}

/** The delivery is not from Mailroom as it was sent: a header is missing, the signature or the timestamp is wrong. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError'
}

const DEFAULT_TOLERANCE_SECONDS = 300
const SECRET_PREFIX = 'whsec_'

/**
 * Checks a delivery's signature with the endpoint's secret and the age of its timestamp, and
 * returns the parsed event; throws `WebhookVerificationError` otherwise. Pass the body exactly as
 * received (the raw text or bytes, not re-serialised JSON). Keep the `webhook-id` of events
 * handled: a retry carries the same one.
 */
export async function verifyWebhook(
  payload: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<WebhookEvent> {
  const id = header(headers, 'webhook-id')
  const timestamp = header(headers, 'webhook-timestamp')
  const signatures = header(headers, 'webhook-signature')
  if (!/^\d{1,15}$/.test(timestamp))
    throw new WebhookVerificationError('webhook-timestamp is not a Unix time')
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000)
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  if (Math.abs(now - Number(timestamp)) > tolerance) {
    throw new WebhookVerificationError(`webhook-timestamp is more than ${tolerance} s away from now`)
  }
  const encoder = new TextEncoder()
  const body = typeof payload === 'string' ? encoder.encode(payload) : payload
  const signed = concat(encoder.encode(`${id}.${timestamp}.`), body)
  const key = await crypto.subtle.importKey(
    'raw',
    decodeBase64(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['verify'],
  )
  for (const entry of signatures.split(' ')) {
    const [version, value] = entry.split(',', 2)
    if (version !== 'v1' || !value) continue
    let signature: Uint8Array<ArrayBuffer>
    try {
      signature = decodeBase64(value)
    } catch {
      continue
    }
    // Web Crypto's verify compares in constant time.
    if (await crypto.subtle.verify('HMAC', key, signature, signed)) {
      return JSON.parse(new TextDecoder().decode(body)) as WebhookEvent
    }
  }
  throw new WebhookVerificationError('No webhook-signature matches the body and the secret')
}

function header(headers: WebhookHeaders, name: string): string {
  const value =
    typeof (headers as Headers).get === 'function'
      ? (headers as Headers).get(name)
      : Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1]
  const text = Array.isArray(value) ? value.join(' ') : value
  if (!text) throw new WebhookVerificationError(`The ${name} header is missing`)
  return text
}

function decodeBase64(text: string): Uint8Array<ArrayBuffer> {
  let binary: string
  try {
    binary = atob(text)
  } catch {
    throw new WebhookVerificationError('The secret or a signature is not base64')
  }
  return Uint8Array.from(binary, (c) => c.charCodeAt(0))
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
  const joined = new Uint8Array(a.length + b.length)
  joined.set(a)
  joined.set(b, a.length)
  return joined
}
