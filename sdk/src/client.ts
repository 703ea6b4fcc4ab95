import createFetchClient, { type Client } from 'openapi-fetch'
import { createCall, type UntypedRequest } from './core.js'
import { bindOperations, type MailroomOperations } from './generated/operations.js'
import type { paths } from './generated/schema.js'

/** A `fetch` implementation; openapi-fetch calls it with a `Request`. */
export type FetchLike = (input: Request, init?: RequestInit) => Promise<Response>

export interface MailroomClientOptions {
  /** The API root, already ending in `/v1`, e.g. `http://127.0.0.1:3000/v1`. A trailing slash is fine. */
  baseUrl: string
  /** API key, sent as `Authorization: Bearer <apiKey>`. Keep it on the server side. */
  apiKey: string
  /** Custom `fetch` (tests, proxies, instrumentation). Defaults to the global `fetch`, looked up per call. */
  fetch?: FetchLike
  /** Extra headers sent with every request (`Authorization` is always the bearer header). */
  headers?: Record<string, string>
  /**
   * How many times one call may be repeated, following the API's retry guidance (default 0):
   * a 429 is retried after its `Retry-After`; `send` without any response is retried with the
   * same `Idempotency-Key` (made by the SDK when none is given). Nothing else is retried.
   */
  retries?: number
  /**
   * Milliseconds each attempt may take until the whole response is read (default 60 000:
   * `send` waits for the SMTP server). A call that runs out throws a `MailroomNetworkError`
   * with code `TIMEOUT`.
   */
  timeoutMs?: number
  /**
   * Longest `Retry-After` wait the SDK sits out for a retry (default 60 000 ms). A 429 asking
   * for more (a daily limit, a quota window) is thrown at once, with its `retryAfter`.
   */
  maxRetryDelayMs?: number
}

/** The raw openapi-fetch client, typed with the generated `paths`. */
export type RawClient = Client<paths>

export interface MailroomClient extends MailroomOperations {
  /**
   * The openapi-fetch client (`{ data, error, response }`, never throws on HTTP errors). It
   * sends the same headers but neither retries nor applies `timeoutMs`.
   */
  readonly raw: RawClient
  /** The base URL in use (without trailing slash). */
  readonly baseUrl: string
}

const DEFAULT_TIMEOUT_MS = 60_000
const DEFAULT_MAX_RETRY_DELAY_MS = 60_000
/** setTimeout's limit: a longer delay would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Creates a Mailroom client: one method per API operation, resolving to the success body and
 * throwing `MailroomError` for an error answer, `MailroomNetworkError` for none.
 *
 * ```ts
 * const mailroom = createClient({ baseUrl: 'http://127.0.0.1:3000/v1', apiKey: process.env.MAILROOM_API_KEY!, retries: 2 })
 * const sent = await mailroom.send({ to: 'ada@example.com', subject: 'Hi', text_body: 'Hello' })
 * ```
 */
export function createClient(options: MailroomClientOptions): MailroomClient {
  if (typeof options?.baseUrl !== 'string' || options.baseUrl.trim() === '') {
    throw new TypeError('createClient: `baseUrl` is required (e.g. http://127.0.0.1:3000/v1)')
  }
  if (typeof options.apiKey !== 'string' || options.apiKey.trim() === '') {
    throw new TypeError('createClient: `apiKey` is required')
  }
  const retries = options.retries ?? 0
  if (!Number.isInteger(retries) || retries < 0) {
    throw new TypeError('createClient: `retries` must be a whole number, 0 or more')
  }
  const timeoutMs = milliseconds(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, 'timeoutMs', 1)
  const maxRetryDelayMs = milliseconds(
    options.maxRetryDelayMs ?? DEFAULT_MAX_RETRY_DELAY_MS,
    'maxRetryDelayMs',
    0,
  )
  const baseUrl = options.baseUrl.trim().replace(/\/+$/, '')
  const customFetch = options.fetch
  // Look the global fetch up per call, so that it can be replaced (or mocked) after creation.
  const fetchImpl: FetchLike = customFetch ?? ((input, requestInit) => globalThis.fetch(input, requestInit))

  const raw: RawClient = createFetchClient<paths>({
    baseUrl,
    fetch: (input: Request) => fetchImpl(input),
    headers: { ...options.headers, Authorization: `Bearer ${options.apiKey}` },
  })
  // The generated operations type every path's parameters and bodies; the core only relays them.
  const request = raw.request as unknown as UntypedRequest
  const call = createCall({ request, retries, timeoutMs, maxRetryDelayMs })
  return { raw, baseUrl, ...bindOperations(call) }
}

function milliseconds(value: number, name: string, min: number): number {
  if (!Number.isInteger(value) || value < min || value > MAX_TIMER_MS) {
    throw new TypeError(
      `createClient: \`${name}\` must be a whole number of milliseconds, ${min} to ${MAX_TIMER_MS}`,
    )
  }
  return value
}
