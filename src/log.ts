import pino from 'pino'
import pretty from 'pino-pretty'
import type { LogFormat, LogLevel } from './config.ts'

export type Logger = pino.Logger

/**
 * Structured logs go to stderr so that stdout stays free for the operator command's JSON:
 * JSON lines, or coloured readable lines for development (`LOG_FORMAT=pretty`). Secrets never
 * reach a log line by design; the redaction list is a second fence.
 */
export function createLogger(level: LogLevel, format: LogFormat = 'json'): Logger {
  return pino(
    {
      level,
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
    format === 'pretty' ? pretty({ destination: 2, sync: true }) : pino.destination(2),
  )
}
