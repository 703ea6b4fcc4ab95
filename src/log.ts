import pino from 'pino'

export type Logger = pino.Logger

/**
 * Structured logs go to stderr so that stdout stays free for the operator command's JSON.
 * Secrets never reach a log line by design; the redaction list is a second fence.
 */
export function createLogger(level: string): Logger {
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
    pino.destination(2),
  )
}
