import { createHmac, randomBytes } from 'node:crypto'

/** Standard Webhooks' secret prefix. */
const PREFIX = 'whsec_'

/** A new signing secret: `whsec_` + base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return `${PREFIX}${randomBytes(32).toString('base64')}`
}

/**
 * The `webhook-signature` header of a delivery: `v1,` + base64 HMAC-SHA256 of
 * `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the secret's decoded bytes.
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64')
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')
  return `v1,${signature}`
}
