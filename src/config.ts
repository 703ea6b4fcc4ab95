import os from 'node:os'
import path from 'node:path'

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]
export const LOG_FORMATS = ['json', 'pretty'] as const
export type LogFormat = (typeof LOG_FORMATS)[number]

/** Every setting Mailroom reads, resolved once from the environment (see README, Configuration). */
export interface Config {
  port: number
  host: string
  /** Unset: an embedded PostgreSQL runs under `dataDir`. */
  databaseUrl: string | undefined
  dataDir: string
  /**
   * MAILROOM_DATA_DIR was not set: when the `postgres` user cannot reach the default, the
   * embedded database moves to a place it can (docs/decisions.md, "Names and settings").
   */
  dataDirIsDefault: boolean
  /** Unset with the embedded database: generated once and kept in `dataDir`. */
  secret: string | undefined
  allowPrivateSmtpHosts: boolean
  /** Webhook endpoints on loopback, private, link-local or unique-local addresses are allowed. */
  allowPrivateWebhookUrls: boolean
  logLevel: LogLevel
  logFormat: LogFormat
  bodyLimitBytes: number
  /** The body limit of POST /send, /enqueue and /send/batch, whose bodies carry attachments. */
  mailBodyLimitBytes: number
  /** Keys and array elements, counted together, that a JSON body may hold (the validation body above). */
  jsonMaxValues: number
  /**
   * A request body has this long to arrive in full, plus one second for each
   * `bodyMinBytesPerSecond` bytes it is long (its Content-Length, else its route's body limit);
   * a body still arriving after that is cut with 408.
   */
  bodyTimeoutSeconds: number
  bodyMinBytesPerSecond: number
  /** Open connections one client address may hold to the public pages (hosted pages, sign-in). */
  publicConnectionsPerAddress: number
  /** When set, GET /metrics asks for `Authorization: Bearer <token>`. */
  metricsToken: string | undefined
  /** Where people reach the service (links in emails, `Secure` cookies); no trailing slash. */
  publicUrl: string
  /** Behind a reverse proxy: the client address is the last one `X-Forwarded-For` names. */
  trustProxy: boolean
  /** The name Mailroom gives itself to SMTP servers (EHLO), seen in every Received: header. */
  ehloName: string
  /** How long queued mail may keep being deferred before it ends failed (hours). */
  queueLifetimeHours: number
  /** How long an SMTP session may sit idle before Mailroom ends it with QUIT (milliseconds). */
  smtpIdleMs: number
  /** The SMTP relay, where apps submit mail (docs/smtp-relay.md). */
  relay: RelayConfig
}

/** The SMTP relay's listeners and bounds. A port of 0 takes any free port. */
export interface RelayConfig {
  /** STARTTLS submission; null when off. */
  port: number | null
  /** Implicit TLS submission; null when off. */
  securePort: number | null
  /** PEM files of the relay's certificate and key; unset, a self-signed pair kept in `dataDir`. */
  tlsCertFile: string | undefined
  tlsKeyFile: string | undefined
  /** The largest message taken, announced with SIZE. */
  maxBytes: number
  /** Sessions one client address may hold open at once. */
  sessionsPerAddress: number
  /** How long a session may wait on its client (between commands, or mid-message) before it is dropped. */
  timeoutSeconds: number
  /** Messages one session may submit; the next MAIL FROM ends the session. */
  messagesPerSession: number
}

/** A setting that cannot be used; the message names every bad one, on one line. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** What a setting's value must be, when it is not. */
class Invalid {
  constructor(readonly rule: string) {}
}

export const MIN_SECRET_LENGTH = 32
const TRUE_WORDS = ['1', 'true', 'yes', 'on']
const FALSE_WORDS = ['0', 'false', 'no', 'off']
const MAX_PORT = 65_535
/** A day: Node's timers take no more than about 24.8 days, and no body should take hours. */
const MAX_TIMEOUT_SECONDS = 86_400
/** The longest an idle SMTP session is kept: below the 30 s socket timeout, which would end it without QUIT. */
const MAX_SMTP_IDLE_MS = 25_000

/**
 * Reads and checks every setting before anything is opened or created: one bad value stops
 * start-up with a line that names it, what it must be, and what it was.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = []
  const read = <T>(name: string, fallback: T, parse: (raw: string) => T | Invalid): T => {
    const raw = env[name]
    if (raw === undefined || raw === '') return fallback
    const value = parse(raw)
    if (!(value instanceof Invalid)) return value
    problems.push(`${name} ${value.rule}, not "${raw}"`)
    return fallback
  }
  const databaseUrl = read<string | undefined>('DATABASE_URL', undefined, (raw) =>
    /^postgres(ql)?:\/\/./.test(raw) && URL.canParse(raw) ? raw : new Invalid('must be a postgres:// URL'),
  )
  const secret = read<string | undefined>('MAILROOM_SECRET', undefined, (raw) =>
    raw.length >= MIN_SECRET_LENGTH
      ? raw
      : new Invalid(`must be at least ${MIN_SECRET_LENGTH} characters long`),
  )
  const port = read('PORT', 3000, (raw) => wholeNumber(raw, 0, MAX_PORT))
  const publicUrl = read('MAILROOM_PUBLIC_URL', `http://127.0.0.1:${port}`, publicUrlSetting)
  const flag = (name: string) =>
    read(name, false, (raw) => {
      const word = raw.toLowerCase()
      if (TRUE_WORDS.includes(word)) return true
      if (FALSE_WORDS.includes(word)) return false
      return new Invalid(`must be one of ${[...TRUE_WORDS, ...FALSE_WORDS].join(', ')}`)
    })
  const config: Config = {
    port,
    host: env.HOST || '127.0.0.1',
    databaseUrl,
    dataDir: path.resolve(env.MAILROOM_DATA_DIR || '.mailroom'),
    dataDirIsDefault: !env.MAILROOM_DATA_DIR,
    secret,
    allowPrivateSmtpHosts: flag('MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS'),
    allowPrivateWebhookUrls: flag('MAILROOM_ALLOW_PRIVATE_WEBHOOK_URLS'),
    logLevel: read<LogLevel>('LOG_LEVEL', 'info', (raw) => oneOf(LOG_LEVELS, raw)),
    logFormat: read<LogFormat>('LOG_FORMAT', 'json', (raw) => oneOf(LOG_FORMATS, raw)),
    bodyLimitBytes: read('MAILROOM_BODY_LIMIT_BYTES', 10 * 1024 * 1024, (raw) =>
      wholeNumber(raw, 1, Number.MAX_SAFE_INTEGER),
    ),
    mailBodyLimitBytes: read('MAILROOM_MAIL_BODY_LIMIT_BYTES', 15 * 1024 * 1024, (raw) =>
      wholeNumber(raw, 1, Number.MAX_SAFE_INTEGER),
    ),
    jsonMaxValues: read('MAILROOM_JSON_MAX_VALUES', 200_000, (raw) =>
      wholeNumber(raw, 1, Number.MAX_SAFE_INTEGER),
    ),
    bodyTimeoutSeconds: read('MAILROOM_BODY_TIMEOUT_SECONDS', 20, (raw) =>
      wholeNumber(raw, 1, MAX_TIMEOUT_SECONDS),
    ),
    bodyMinBytesPerSecond: read('MAILROOM_BODY_MIN_BYTES_PER_SECOND', 256 * 1024, (raw) =>
      wholeNumber(raw, 1, Number.MAX_SAFE_INTEGER),
    ),
    publicConnectionsPerAddress: read('MAILROOM_PUBLIC_CONNECTIONS_PER_ADDRESS', 64, (raw) =>
      wholeNumber(raw, 1, Number.MAX_SAFE_INTEGER),
    ),
    metricsToken: read<string | undefined>('MAILROOM_METRICS_TOKEN', undefined, (raw) =>
      /^[\x21-\x7e]+$/.test(raw) ? raw : new Invalid('must be printable ASCII without spaces'),
    ),
    publicUrl,
    trustProxy: flag('MAILROOM_TRUST_PROXY'),
    // The public address names this service; the default one (loopback) names no host.
    ehloName:
      env.MAILROOM_EHLO_NAME ||
      (env.MAILROOM_PUBLIC_URL ? new URL(publicUrl).hostname.replace(/^\[(.*)\]$/, '$1') : os.hostname()),
    queueLifetimeHours: read('MAILROOM_QUEUE_LIFETIME_HOURS', 72, (raw) =>
      wholeNumber(raw, 1, Number.MAX_SAFE_INTEGER),
    ),
    smtpIdleMs: read('MAILROOM_SMTP_IDLE_MS', 20_000, (raw) => wholeNumber(raw, 1, MAX_SMTP_IDLE_MS)),
    relay: relaySettings(read),
  }
  problems.push(...mismatches(env, config))
  if (problems.length) throw new ConfigError(`invalid settings: ${problems.join('; ')}`)
  return config
}

/** What is wrong with settings that are each valid alone but not together. */
function mismatches(env: NodeJS.ProcessEnv, config: Config): string[] {
  const problems: string[] = []
  const taken = [config.port, config.relay.port, config.relay.securePort].filter((p) => p !== null && p !== 0)
  if (new Set(taken).size < taken.length) {
    problems.push('PORT, MAILROOM_SMTP_PORT and MAILROOM_SMTPS_PORT must differ (0 or off excepted)')
  }
  if (Boolean(env.MAILROOM_SMTP_TLS_CERT) !== Boolean(env.MAILROOM_SMTP_TLS_KEY)) {
    problems.push('MAILROOM_SMTP_TLS_CERT and MAILROOM_SMTP_TLS_KEY are set together or not at all')
  }
  if (config.databaseUrl && !env.MAILROOM_SECRET) {
    problems.push(
      'MAILROOM_SECRET is required with DATABASE_URL: it encrypts SMTP passwords at rest ' +
        `(a random string of at least ${MIN_SECRET_LENGTH} characters; keep it)`,
    )
  }
  return problems
}

type Reader = <T>(name: string, fallback: T, parse: (raw: string) => T | Invalid) => T

function relaySettings(read: Reader): RelayConfig {
  const port = (raw: string) => (raw.toLowerCase() === 'off' ? null : wholeNumber(raw, 0, MAX_PORT, 'or off'))
  const count = (raw: string) => wholeNumber(raw, 1, Number.MAX_SAFE_INTEGER)
  return {
    port: read<number | null>('MAILROOM_SMTP_PORT', 2587, port),
    securePort: read<number | null>('MAILROOM_SMTPS_PORT', 2465, port),
    tlsCertFile: read<string | undefined>('MAILROOM_SMTP_TLS_CERT', undefined, (raw) => path.resolve(raw)),
    tlsKeyFile: read<string | undefined>('MAILROOM_SMTP_TLS_KEY', undefined, (raw) => path.resolve(raw)),
    maxBytes: read('MAILROOM_SMTP_MAX_BYTES', 25 * 1024 * 1024, count),
    sessionsPerAddress: read('MAILROOM_SMTP_SESSIONS_PER_ADDRESS', 20, count),
    timeoutSeconds: read('MAILROOM_SMTP_SESSION_TIMEOUT_SECONDS', 60, (raw) =>
      wholeNumber(raw, 1, MAX_TIMEOUT_SECONDS),
    ),
    messagesPerSession: read('MAILROOM_SMTP_MESSAGES_PER_SESSION', 100, count),
  }
}

/** The largest body any route takes. */
export function largestBodyBytes(config: Pick<Config, 'bodyLimitBytes' | 'mailBodyLimitBytes'>): number {
  return Math.max(config.bodyLimitBytes, config.mailBodyLimitBytes)
}

/** A whole number from `min` to `max`; `alternative` names what else the setting takes. */
function wholeNumber(raw: string, min: number, max: number, alternative?: string): number | Invalid {
  const value = Number(raw)
  if (/^\d+$/.test(raw) && value >= min && value <= max) return value
  const rule =
    max === Number.MAX_SAFE_INTEGER
      ? `must be a whole number, at least ${min}`
      : `must be a whole number from ${min} to ${max}`
  return new Invalid(alternative ? `${rule}, ${alternative}` : rule)
}

function publicUrlSetting(raw: string): string | Invalid {
  const url = URL.canParse(raw) ? new URL(raw) : undefined
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.search || url.hash)
    return new Invalid('must be an http or https address without query or fragment')
  return url.href.replace(/\/+$/, '')
}

function oneOf<T extends string>(allowed: readonly T[], raw: string): T | Invalid {
  return allowed.find((a) => a === raw) ?? new Invalid(`must be one of ${allowed.join(', ')}`)
}
