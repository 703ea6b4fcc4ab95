/**
 * The hand-written core under the generated operations (`./generated/operations.ts`): one
 * `call` that sends a request through openapi-fetch and applies the API's retry guidance.
 *
 * Rules, with `retries` = n (default 0), shared by all retries of one call:
 * 1. A 429 waits `retryAfter` seconds (`details.retryAfter`, else the `Retry-After` header) and
 *    tries again, on every operation. A 429 without either, or whose wait would exceed
 *    `maxRetryDelayMs`, is thrown at once.
 * 2. An operation with an idempotency header (`POST /send`'s `Idempotency-Key`) that gets no
 *    response at all (network failure, or this attempt's `timeoutMs` ran out) is tried again
 *    after a short pause, carrying the same key: the caller's, or one the SDK made for the call.
 * 3. Nothing else is retried: not a 5xx, not another 4xx, not a network failure of any other
 *    operation (its effect is unknown and it has no key to make a repeat safe), not the
 *    caller's own abort.
 * Every attempt has its own `timeoutMs`.
 */
import { withEncodedAttachments } from './attachments.js'
import { MailroomError, MailroomNetworkError } from './errors.js'

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** Per-call options accepted by every method. */
export interface RequestOptions {
  /** Aborts the call, including a wait before a retry; it then rejects with the signal's reason. */
  signal?: AbortSignal
  /** Extra headers for this call. */
  headers?: Record<string, string>
}

/** What a generated operation hands to `call`. */
export interface CallInit {
  path?: Record<string, string | number>
  query?: object
  header?: Record<string, string | undefined>
  body?: unknown
  options?: RequestOptions | undefined
  /** The operation's idempotency header: an attempt without a response is retried with the same key. */
  idempotencyHeader?: string
}

export type Call = <T>(method: HttpMethod, path: string, init: CallInit) => Promise<T>

/** openapi-fetch's `request`, seen without its per-path typing (the generated code supplies that). */
export type UntypedRequest = (
  method: HttpMethod,
  path: string,
  init: {
    params: { path?: object; query?: object; header?: Record<string, string> }
    body?: unknown
    headers?: Record<string, string>
    signal: AbortSignal
  },
) => Promise<{ data?: unknown; error?: unknown; response: Response }>

export interface CoreSettings {
  request: UntypedRequest
  retries: number
  timeoutMs: number
  maxRetryDelayMs: number
}

/** Pause before retrying an attempt that got no response: long enough for a blip to pass. */
const NETWORK_RETRY_DELAY_MS = 250

export function createCall(settings: CoreSettings): Call {
  const { request, retries, timeoutMs, maxRetryDelayMs } = settings
  return async function call<T>(method: HttpMethod, path: string, init: CallInit): Promise<T> {
    const header: Record<string, string> = {}
    for (const [name, value] of Object.entries(init.header ?? {})) {
      if (value !== undefined) header[name] = value
    }
    const keyHeader = init.idempotencyHeader
    let idempotencyKey: string | undefined
    if (keyHeader !== undefined) {
      // A key set through plain `headers` counts too: the SDK's own would otherwise replace it.
      idempotencyKey = header[keyHeader] ?? headerValue(init.options?.headers, keyHeader)
      // A retry is only safe under a key, and it must be the same key on every attempt.
      if (idempotencyKey === undefined && retries > 0) idempotencyKey = globalThis.crypto.randomUUID()
      if (idempotencyKey !== undefined) header[keyHeader] = idempotencyKey
    }
    const callerSignal = init.options?.signal

    for (let attempt = 0; ; attempt++) {
      callerSignal?.throwIfAborted()
      const timeout = AbortSignal.timeout(timeoutMs)
      let result: Awaited<ReturnType<UntypedRequest>>
      try {
        result = await request(method, path, {
          params: { path: init.path, query: init.query, header },
          body: withEncodedAttachments(init.body),
          headers: init.options?.headers,
          signal: callerSignal ? AbortSignal.any([callerSignal, timeout]) : timeout,
        })
      } catch (cause) {
        if (callerSignal?.aborted) throw cause
        const failure = new MailroomNetworkError({
          code: timeout.aborted ? 'TIMEOUT' : 'NETWORK_ERROR',
          method,
          path,
          cause,
          timeoutMs,
          idempotencyKey,
        })
        if (keyHeader === undefined || attempt >= retries) throw failure
        await sleep(NETWORK_RETRY_DELAY_MS, callerSignal)
        continue
      }

      const { data, error, response } = result
      if (response.ok) return data as T
      const failure = MailroomError.fromResponse(response, error, { method, idempotencyKey })
      const retryAfter = failure.status === 429 ? failure.retryAfter : undefined
      if (retryAfter === undefined || retryAfter * 1000 > maxRetryDelayMs || attempt >= retries) throw failure
      await sleep(retryAfter * 1000, callerSignal)
    }
  }
}

function headerValue(headers: Record<string, string> | undefined, name: string): string | undefined {
  const wanted = name.toLowerCase()
  return Object.entries(headers ?? {}).find(([key]) => key.toLowerCase() === wanted)?.[1]
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
