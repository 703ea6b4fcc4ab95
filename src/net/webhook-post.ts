import http from 'node:http'
import https from 'node:https'
import { HostAddressError, resolvePublicHost } from './public-address.ts'

/** What became of a POST: the status the endpoint answered, or why there was none. */
export type PostOutcome = { status: number; error?: undefined } | { status: null; error: string }

export interface PostOptions {
  /** The whole exchange (look-up, connection, answer) ends by then. */
  timeoutMs: number
  allowPrivate: boolean
}

/** An answer's body is read (to let the connection end cleanly) up to this, then dropped. */
const MAX_ANSWER_BYTES = 64 * 1024

export const WEBHOOK_HOST = { label: 'Webhook URL host', setting: 'MAILROOM_ALLOW_PRIVATE_WEBHOOK_URLS' }

/**
 * POSTs `body` to `url`, connecting to the address that was checked (no second look-up that
 * could be steered elsewhere), with the URL's host name for TLS and `Host`. Redirects are not
 * followed. Never throws: a refusal, a timeout or a broken connection is an outcome.
 */
export async function postWebhook(
  url: string,
  body: string,
  headers: Record<string, string>,
  options: PostOptions,
): Promise<PostOutcome> {
  const deadline = AbortSignal.timeout(options.timeoutMs)
  try {
    const target = new URL(url)
    const resolved = await Promise.race([
      resolvePublicHost(target.hostname, options.allowPrivate, WEBHOOK_HOST),
      new Promise<never>((_, reject) =>
        deadline.addEventListener('abort', () => reject(deadline.reason), { once: true }),
      ),
    ])
    const status = await new Promise<number>((resolve, reject) => {
      const secure = target.protocol === 'https:'
      const request = (secure ? https : http).request(
        {
          method: 'POST',
          host: resolved.address,
          port: target.port || (secure ? 443 : 80),
          path: `${target.pathname}${target.search}`,
          setHost: false,
          headers: {
            ...headers,
            host: target.host,
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
          },
          ...(secure && resolved.servername ? { servername: resolved.servername } : {}),
          signal: deadline,
          agent: false,
        },
        (response) => {
          let read = 0
          response.on('data', (chunk: Buffer) => {
            read += chunk.length
            if (read > MAX_ANSWER_BYTES) response.destroy()
          })
          response.on('close', () => resolve(response.statusCode ?? 0))
          response.on('error', () => resolve(response.statusCode ?? 0))
        },
      )
      request.on('error', reject)
      request.end(body)
    })
    return { status }
  } catch (error) {
    return { status: null, error: reasonOf(error, options.timeoutMs) }
  }
}

function reasonOf(error: unknown, timeoutMs: number): string {
  if (error instanceof HostAddressError) return error.message
  const name = (error as { name?: string }).name
  if (name === 'TimeoutError' || name === 'AbortError') return `No answer within ${timeoutMs / 1000} s`
  const code = (error as NodeJS.ErrnoException).code
  const message = error instanceof Error ? error.message : String(error)
  return code ? `${code}: ${message}` : message
}
