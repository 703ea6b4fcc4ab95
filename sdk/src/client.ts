import createFetchClient, { type Client } from 'openapi-fetch'
import { MailroomError } from './errors.js'
import type { paths } from './generated/schema.js'
import type {
  AddAudienceMembersResponse,
  AudienceCreateRequest,
  AudienceListResponse,
  AudienceMemberInput,
  AudienceMemberListResponse,
  AudienceResponse,
  AudienceUpdateRequest,
  AudienceWithCountResponse,
  BatchCreatedResponse,
  BatchRequest,
  BatchResponse,
  EmailRequest,
  EnqueueResponse,
  SendResponse,
  SuccessMessage,
  TemplateCreateRequest,
  TemplateListResponse,
  TemplateResponse,
  TemplateUpdateRequest,
} from './types.js'

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
}

/** Per-call options accepted by every method. */
export interface RequestOptions {
  /** Aborts the request (e.g. `AbortSignal.timeout(30_000)`). */
  signal?: AbortSignal
  /** Extra headers for this call. */
  headers?: Record<string, string>
}

export interface SendOptions extends RequestOptions {
  /**
   * Sent as the `Idempotency-Key` header: a retry with the same key replays the first result
   * (`replayed: true`) instead of sending again.
   */
  idempotencyKey?: string
}

export interface ListMembersQuery {
  /** Members per page, 1 to 1000 (server default 100). */
  limit?: number
  /** Members to skip (server default 0). */
  offset?: number
}

/** The raw openapi-fetch client, typed with the generated `paths`. */
export type RawClient = Client<paths>

export interface MailroomClient {
  /** The openapi-fetch client (`{ data, error, response }`, never throws on HTTP errors). */
  readonly raw: RawClient
  /** The base URL in use (without trailing slash). */
  readonly baseUrl: string
  /** `POST /send`: sends now and waits for the SMTP server. */
  send(body: EmailRequest, options?: SendOptions): Promise<SendResponse>
  /** `POST /enqueue`: queues one email (Pro). */
  enqueue(body: EmailRequest, options?: RequestOptions): Promise<EnqueueResponse>
  readonly batches: {
    /** `POST /send/batch` (Pro). */
    create(body: BatchRequest, options?: RequestOptions): Promise<BatchCreatedResponse>
    /** `GET /batches/{id}` (Pro). */
    get(id: number, options?: RequestOptions): Promise<BatchResponse>
    /** `DELETE /batches/{id}`: only `completed` or `failed` batches (Pro). */
    delete(id: number, options?: RequestOptions): Promise<SuccessMessage>
  }
  readonly audiences: {
    /** `GET /audiences`, newest first (Pro). */
    list(options?: RequestOptions): Promise<AudienceListResponse>
    /** `POST /audiences` (Pro). */
    create(body: AudienceCreateRequest, options?: RequestOptions): Promise<AudienceResponse>
    /** `GET /audiences/{id}`, with `member_count` (Pro). */
    get(id: number, options?: RequestOptions): Promise<AudienceWithCountResponse>
    /** `PUT /audiences/{id}` (Pro). */
    update(id: number, body: AudienceUpdateRequest, options?: RequestOptions): Promise<AudienceResponse>
    /** `DELETE /audiences/{id}` (Pro). */
    delete(id: number, options?: RequestOptions): Promise<SuccessMessage>
    readonly members: {
      /** `GET /audiences/{id}/members`: one page; increase `offset` by `limit` while `pagination.hasMore`. */
      list(
        id: number,
        query?: ListMembersQuery,
        options?: RequestOptions,
      ): Promise<AudienceMemberListResponse>
      /** `POST /audiences/{id}/members`: 1 to 10000 members; existing addresses count as duplicates. */
      add(
        id: number,
        members: AudienceMemberInput[],
        options?: RequestOptions,
      ): Promise<AddAudienceMembersResponse>
      /** `DELETE /audiences/{id}/members/{memberId}`. */
      delete(id: number, memberId: number, options?: RequestOptions): Promise<SuccessMessage>
    }
  }
  readonly templates: {
    /** `GET /templates`. */
    list(options?: RequestOptions): Promise<TemplateListResponse>
    /** `POST /templates` (Free plan keeps 3: `TEMPLATE_LIMIT_REACHED`). */
    create(body: TemplateCreateRequest, options?: RequestOptions): Promise<TemplateResponse>
    /** `GET /templates/{id}`. */
    get(id: number, options?: RequestOptions): Promise<TemplateResponse>
    /** `PUT /templates/{id}`: fields left out keep their value. */
    update(id: number, body: TemplateUpdateRequest, options?: RequestOptions): Promise<TemplateResponse>
    /** `DELETE /templates/{id}`. */
    delete(id: number, options?: RequestOptions): Promise<SuccessMessage>
  }
}

interface RawResult<T> {
  data?: T
  error?: unknown
  response: Response
}

/** Returns the success body, or throws a `MailroomError` for any non-2xx answer. */
async function unwrap<T>(pending: Promise<RawResult<T>>): Promise<T> {
  const { data, error, response } = await pending
  if (!response.ok) throw MailroomError.fromResponse(response, error)
  return data as T
}

/** Only the keys openapi-fetch understands, without `undefined` values. */
function init(options: RequestOptions | undefined): {
  signal?: AbortSignal
  headers?: Record<string, string>
} {
  const result: { signal?: AbortSignal; headers?: Record<string, string> } = {}
  if (options?.signal) result.signal = options.signal
  if (options?.headers) result.headers = options.headers
  return result
}

/**
 * Creates a Mailroom client.
 *
 * ```ts
 * const mailroom = createClient({ baseUrl: 'http://127.0.0.1:3000/v1', apiKey: process.env.MAILROOM_API_KEY! })
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
  const baseUrl = options.baseUrl.trim().replace(/\/+$/, '')
  const customFetch = options.fetch
  // Look the global fetch up per call, so that it can be replaced (or mocked) after creation.
  const fetchImpl: FetchLike = customFetch ?? ((input, requestInit) => globalThis.fetch(input, requestInit))

  const raw: RawClient = createFetchClient<paths>({
    baseUrl,
    fetch: (input: Request) => fetchImpl(input),
    headers: { ...options.headers, Authorization: `Bearer ${options.apiKey}` },
  })

  return {
    raw,
    baseUrl,

    send: (body, sendOptions) =>
      unwrap(
        raw.POST('/send', {
          ...init(sendOptions),
          params: sendOptions?.idempotencyKey
            ? { header: { 'Idempotency-Key': sendOptions.idempotencyKey } }
            : {},
          body,
        }),
      ),
    enqueue: (body, requestOptions) => unwrap(raw.POST('/enqueue', { ...init(requestOptions), body })),

    batches: {
      create: (body, requestOptions) => unwrap(raw.POST('/send/batch', { ...init(requestOptions), body })),
      get: (id, requestOptions) =>
        unwrap(raw.GET('/batches/{id}', { ...init(requestOptions), params: { path: { id } } })),
      delete: (id, requestOptions) =>
        unwrap(raw.DELETE('/batches/{id}', { ...init(requestOptions), params: { path: { id } } })),
    },

    audiences: {
      list: (requestOptions) => unwrap(raw.GET('/audiences', { ...init(requestOptions) })),
      create: (body, requestOptions) => unwrap(raw.POST('/audiences', { ...init(requestOptions), body })),
      get: (id, requestOptions) =>
        unwrap(raw.GET('/audiences/{id}', { ...init(requestOptions), params: { path: { id } } })),
      update: (id, body, requestOptions) =>
        unwrap(raw.PUT('/audiences/{id}', { ...init(requestOptions), params: { path: { id } }, body })),
      delete: (id, requestOptions) =>
        unwrap(raw.DELETE('/audiences/{id}', { ...init(requestOptions), params: { path: { id } } })),
      members: {
        list: (id, query, requestOptions) =>
          unwrap(
            raw.GET('/audiences/{id}/members', {
              ...init(requestOptions),
              params: { path: { id }, query: { limit: query?.limit, offset: query?.offset } },
            }),
          ),
        add: (id, members, requestOptions) =>
          unwrap(
            raw.POST('/audiences/{id}/members', {
              ...init(requestOptions),
              params: { path: { id } },
              body: { members },
            }),
          ),
        delete: (id, memberId, requestOptions) =>
          unwrap(
            raw.DELETE('/audiences/{id}/members/{memberId}', {
              ...init(requestOptions),
              params: { path: { id, memberId } },
            }),
          ),
      },
    },

    templates: {
      list: (requestOptions) => unwrap(raw.GET('/templates', { ...init(requestOptions) })),
      create: (body, requestOptions) => unwrap(raw.POST('/templates', { ...init(requestOptions), body })),
      get: (id, requestOptions) =>
        unwrap(raw.GET('/templates/{id}', { ...init(requestOptions), params: { path: { id } } })),
      update: (id, body, requestOptions) =>
        unwrap(raw.PUT('/templates/{id}', { ...init(requestOptions), params: { path: { id } }, body })),
      delete: (id, requestOptions) =>
        unwrap(raw.DELETE('/templates/{id}', { ...init(requestOptions), params: { path: { id } } })),
    },
  }
}
