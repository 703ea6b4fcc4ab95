import os from 'node:os'
import path from 'node:path'

/** Every setting Mailroom reads, resolved once from the environment (see README, Configuration). */
export interface Config {
  port: number
  host: string
  /** Unset: an embedded PostgreSQL runs under `dataDir`. */
  databaseUrl: string | undefined
  dataDir: string
  /** Unset with the embedded database: generated once and kept in `dataDir`. */
  secret: string | undefined
  allowPrivateSmtpHosts: boolean
  logLevel: string
  bodyLimitBytes: number
  /** Where people reach the service (links in emails, `Secure` cookies); no trailing slash. */
  publicUrl: string
  /** Behind a reverse proxy: the client address is the last one `X-Forwarded-For` names. */
  trustProxy: boolean
  /** The name Mailroom gives itself to SMTP servers (EHLO), seen in every Received: header. */
  ehloName: string
  /** How long queued mail may keep being deferred before it ends failed (hours). */
  queueLifetimeHours: number
}

const TRUE_WORDS = new Set(['1', 'true', 'yes', 'on'])

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integerSetting(env, 'PORT', 3000)
  const publicUrl = publicUrlSetting(env.MAILROOM_PUBLIC_URL || `http://127.0.0.1:${port}`)
  return {
    port,
    host: env.HOST || '127.0.0.1',
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: path.resolve(env.MAILROOM_DATA_DIR || '.mailroom'),
    secret: env.MAILROOM_SECRET || undefined,
    allowPrivateSmtpHosts: TRUE_WORDS.has((env.MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS ?? '').toLowerCase()),
    logLevel: env.LOG_LEVEL || 'info',
    bodyLimitBytes: integerSetting(env, 'MAILROOM_BODY_LIMIT_BYTES', 10 * 1024 * 1024),
    publicUrl,
    trustProxy: TRUE_WORDS.has((env.MAILROOM_TRUST_PROXY ?? '').toLowerCase()),
    // The public address names this service; the default one (loopback) names no host.
    ehloName:
      env.MAILROOM_EHLO_NAME ||
      (env.MAILROOM_PUBLIC_URL ? new URL(publicUrl).hostname.replace(/^\[(.*)\]$/, '$1') : os.hostname()),
    queueLifetimeHours: integerSetting(env, 'MAILROOM_QUEUE_LIFETIME_HOURS', 72),
  }
}

function publicUrlSetting(raw: string): string {
  const url = URL.canParse(raw) ? new URL(raw) : undefined
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.search || url.hash)
    throw new Error(`MAILROOM_PUBLIC_URL must be an http or https address, got "${raw}"`)
  return url.href.replace(/\/+$/, '')
}

function integerSetting(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 0)
    throw new Error(`${name} must be a non-negative integer, got "${raw}"`)
  return value
}
