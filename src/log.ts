import { AsyncLocalStorage } from 'node:async_hooks'
import pino from 'pino'
import pretty from 'pino-pretty'
import type { LogFormat, LogLevel } from './config.ts'

export type Logger = pino.Logger

/** The API request (or the queued work it created) the code now running is about. */
const requestContext = new AsyncLocalStorage<{ requestId: string }>()

/** Runs `work` on behalf of the request `requestId`: every log line it writes carries the id. */
export function withRequestId<T>(requestId: string | null | undefined, work: () => T): T {
  return requestId ? requestContext.run({ requestId }, work) : work()
}

/** The id of the request being served, if any (stored with the work it queues). */
export function currentRequestId(): string | undefined {
  return requestContext.getStore()?.requestId
}

/**
 * Fields of a database error that quote the data it was about: PostgreSQL's `detail`, `where`
 * (for JSON, the text around the fault) and `hint`, and the statement and its parameters where
 * a driver keeps them.
 */
const DATA_FIELDS = [
  'detail',
  'where',
  'hint',
  'query',
  'parameters',
  'internal_query',
  'position',
  'internal_position',
]
/** Quoted values in a database error's message (`invalid input syntax for type json: "…"`). */
const QUOTED = /"(?:[^"\\]|\\.)*"/g

function isDatabaseError(error: unknown): boolean {
  const { severity, code } = (error ?? {}) as { severity?: unknown; code?: unknown }
  return typeof severity === 'string' && typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)
}

/**
 * pino's error serializer, keeping a database error's code and routine but none of the data it
 * quotes (logs never carry subjects, bodies or payloads).
 */
function errWithoutData(error: unknown): unknown {
  const serialized = pino.stdSerializers.err(error as Error) as unknown as Record<string, unknown>
  if (!isDatabaseError(error)) return serialized
  for (const field of DATA_FIELDS) delete serialized[field]
  for (const field of ['message', 'stack'] as const) {
    const text = serialized[field]
    if (typeof text === 'string') serialized[field] = text.replace(QUOTED, '"…"')
  }
  return serialized
}

/**
 * Structured logs go to stderr so that stdout stays free for the operator command's JSON:
 * JSON lines, or coloured readable lines for development (`LOG_FORMAT=pretty`); tests may
 * write them elsewhere. A line written
 * on behalf of a request carries its `requestId`, whichever module wrote it. Secrets never reach
 * a log line by design; the redaction list is a second fence.
 */
export function createLogger(
  level: LogLevel,
  format: LogFormat = 'json',
  // Written off the main thread, lines that come together in one write: a busy service's event
  // loop does not stop for a write per line. pino writes what is left when the process exits.
  destination: pino.DestinationStream = pino.destination({ dest: 2, sync: false }),
): Logger {
  return pino(
    {
      level,
      mixin: () => requestContext.getStore() ?? {},
      serializers: { err: errWithoutData },
      redact: {
        paths: [
          'password',
          '*.password',
          'key',
          '*.key',
          'authorization',
          '*.authorization',
          'text_body',
          'html_body',
          '*.text_body',
          '*.html_body',
        ],
        censor: '[redacted]',
      },
    },
    format === 'pretty' ? pretty({ destination, sync: true }) : destination,
  )
}
