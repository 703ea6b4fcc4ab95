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
  /** The name Mailroom gives itself to SMTP servers (EHLO), seen in every Received: header. */
  ehloName: string
  /** How long queued mail may keep being deferred before it ends failed (hours). */
  queueLifetimeHours: number
}

const TRUE_WORDS = new Set(['1', 'true', 'yes', 'on'])

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    port: integerSetting(env, 'PORT', 3000),
    host: env.HOST || '127.0.0.1',
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: path.resolve(env.MAILROOM_DATA_DIR || '.mailroom'),
    secret: env.MAILROOM_SECRET || undefined,
    allowPrivateSmtpHosts: TRUE_WORDS.has((env.MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS ?? '').toLowerCase()),
    logLevel: env.LOG_LEVEL || 'info',
    bodyLimitBytes: integerSetting(env, 'MAILROOM_BODY_LIMIT_BYTES', 10 * 1024 * 1024),
    ehloName: env.MAILROOM_EHLO_NAME || hostOf(env.MAILROOM_PUBLIC_URL) || os.hostname(),
    queueLifetimeHours: integerSetting(env, 'MAILROOM_QUEUE_LIFETIME_HOURS', 72),
  }
}

/** The host name of a URL setting, when it is one. */
function hostOf(url: string | undefined): string | undefined {
  if (!url) return undefined
  try {
    return new URL(url).hostname.replace(/^\[(.*)\]$/, '$1') || undefined
  } catch {
    return undefined
  }
}

function integerSetting(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 0)
    throw new Error(`${name} must be a non-negative integer, got "${raw}"`)
  return value
}
