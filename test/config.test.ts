import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config.ts'
import { testRelay } from './support/app.ts'

describe('settings', () => {
  it('needs none: every setting has a default', () => {
    expect(loadConfig({})).toEqual({
      port: 3000,
      host: '127.0.0.1',
      databaseUrl: undefined,
      dataDir: path.resolve('.mailroom'),
      dataDirIsDefault: true,
      secret: undefined,
      allowPrivateSmtpHosts: false,
      allowPrivateWebhookUrls: false,
      logLevel: 'info',
      logFormat: 'json',
      bodyLimitBytes: 10 * 1024 * 1024,
      mailBodyLimitBytes: 15 * 1024 * 1024,
      jsonMaxValues: 200_000,
      bodyTimeoutSeconds: 20,
      bodyMinBytesPerSecond: 256 * 1024,
      publicConnectionsPerAddress: 64,
      metricsToken: undefined,
      ehloName: os.hostname(),
      queueLifetimeHours: 72,
      smtpIdleMs: 20_000,
      relay: testRelay({ port: 2587, securePort: 2465 }),
      publicUrl: 'http://127.0.0.1:3000',
      trustProxy: false,
    })
  })

  it('reads each one from its environment variable', () => {
    expect(
      loadConfig({
        PORT: '8080',
        HOST: '0.0.0.0',
        DATABASE_URL: 'postgres://u:p@db.example:5432/mailroom',
        MAILROOM_DATA_DIR: '/var/lib/mailroom',
        MAILROOM_SECRET: 's'.repeat(40),
        MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS: 'true',
        MAILROOM_ALLOW_PRIVATE_WEBHOOK_URLS: 'yes',
        LOG_LEVEL: 'debug',
        LOG_FORMAT: 'pretty',
        MAILROOM_BODY_LIMIT_BYTES: '2048',
        MAILROOM_MAIL_BODY_LIMIT_BYTES: '4096',
        MAILROOM_JSON_MAX_VALUES: '5000',
        MAILROOM_BODY_TIMEOUT_SECONDS: '10',
        MAILROOM_BODY_MIN_BYTES_PER_SECOND: '65536',
        MAILROOM_PUBLIC_CONNECTIONS_PER_ADDRESS: '16',
        MAILROOM_METRICS_TOKEN: 'scrape-me-please',
        MAILROOM_EHLO_NAME: 'mta.example.com',
        MAILROOM_QUEUE_LIFETIME_HOURS: '120',
        MAILROOM_SMTP_IDLE_MS: '5000',
        MAILROOM_SMTP_PORT: '587',
        MAILROOM_SMTPS_PORT: 'off',
        MAILROOM_SMTP_TLS_CERT: '/etc/mailroom/cert.pem',
        MAILROOM_SMTP_TLS_KEY: '/etc/mailroom/key.pem',
        MAILROOM_SMTP_MAX_BYTES: '1048576',
        MAILROOM_SMTP_SESSIONS_PER_ADDRESS: '5',
        MAILROOM_SMTP_SESSION_TIMEOUT_SECONDS: '30',
        MAILROOM_SMTP_MESSAGES_PER_SESSION: '50',
        MAILROOM_PUBLIC_URL: 'https://mail.example.com/',
        MAILROOM_TRUST_PROXY: '1',
      }),
    ).toEqual({
      port: 8080,
      host: '0.0.0.0',
      databaseUrl: 'postgres://u:p@db.example:5432/mailroom',
      dataDir: '/var/lib/mailroom',
      dataDirIsDefault: false,
      secret: 's'.repeat(40),
      allowPrivateSmtpHosts: true,
      allowPrivateWebhookUrls: true,
      logLevel: 'debug',
      logFormat: 'pretty',
      bodyLimitBytes: 2048,
      mailBodyLimitBytes: 4096,
      jsonMaxValues: 5000,
      bodyTimeoutSeconds: 10,
      bodyMinBytesPerSecond: 65536,
      publicConnectionsPerAddress: 16,
      metricsToken: 'scrape-me-please',
      ehloName: 'mta.example.com',
      queueLifetimeHours: 120,
      smtpIdleMs: 5000,
      relay: {
        port: 587,
        securePort: null,
        tlsCertFile: '/etc/mailroom/cert.pem',
        tlsKeyFile: '/etc/mailroom/key.pem',
        maxBytes: 1_048_576,
        sessionsPerAddress: 5,
        timeoutSeconds: 30,
        messagesPerSession: 50,
      },
      publicUrl: 'https://mail.example.com',
      trustProxy: true,
    })
  })

  it("names itself to SMTP servers after MAILROOM_PUBLIC_URL's host when no EHLO name is set", () => {
    expect(loadConfig({ MAILROOM_PUBLIC_URL: 'https://mail.acme.example/' }).ehloName).toBe(
      'mail.acme.example',
    )
    // The default public address (loopback) names no host.
    expect(loadConfig({}).ehloName).toBe(os.hostname())
    expect(
      loadConfig({ MAILROOM_PUBLIC_URL: 'https://mail.acme.example', MAILROOM_EHLO_NAME: 'mx.acme.example' })
        .ehloName,
    ).toBe('mx.acme.example')
  })

  it.each(['1', 'true', 'yes', 'on', 'TRUE'])(
    'MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS=%s allows private hosts',
    (value) => {
      expect(loadConfig({ MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS: value }).allowPrivateSmtpHosts).toBe(true)
    },
  )

  it.each(['', '0', 'false', 'no', 'off'])(
    'MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS=%j keeps them refused',
    (value) => {
      expect(loadConfig({ MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS: value }).allowPrivateSmtpHosts).toBe(false)
    },
  )

  it.each([
    ['PORT', '0', 0],
    ['PORT', '65535', 65535],
    ['MAILROOM_BODY_LIMIT_BYTES', '1', 1],
  ])('takes %s=%s, the edge of its range', (name, value, expected) => {
    const config = loadConfig({ [name]: value })
    expect(name === 'PORT' ? config.port : config.bodyLimitBytes).toBe(expected)
  })

  it.each([
    ['PORT', '70000', 'PORT must be a whole number from 0 to 65535, not "70000"'],
    ['PORT', '65536', 'PORT must be a whole number from 0 to 65535, not "65536"'],
    ['PORT', 'abc', 'PORT must be a whole number from 0 to 65535, not "abc"'],
    ['PORT', '-1', 'PORT must be a whole number from 0 to 65535, not "-1"'],
    ['PORT', '3.5', 'PORT must be a whole number from 0 to 65535, not "3.5"'],
    [
      'LOG_LEVEL',
      'verbose',
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, not "verbose"',
    ],
    ['LOG_FORMAT', 'xml', 'LOG_FORMAT must be one of json, pretty, not "xml"'],
    [
      'MAILROOM_BODY_LIMIT_BYTES',
      '0',
      'MAILROOM_BODY_LIMIT_BYTES must be a whole number, at least 1, not "0"',
    ],
    ['MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS', 'maybe', 'MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS must be one of'],
    ['MAILROOM_SECRET', 'short', 'MAILROOM_SECRET must be at least 32 characters long, not "short"'],
    ['DATABASE_URL', 'mysql://db/x', 'DATABASE_URL must be a postgres:// URL, not "mysql://db/x"'],
    ['MAILROOM_METRICS_TOKEN', 'two words', 'MAILROOM_METRICS_TOKEN must be printable ASCII without spaces'],
    ['MAILROOM_TRUST_PROXY', 'maybe', 'MAILROOM_TRUST_PROXY must be one of'],
    [
      'MAILROOM_QUEUE_LIFETIME_HOURS',
      '0',
      'MAILROOM_QUEUE_LIFETIME_HOURS must be a whole number, at least 1, not "0"',
    ],
    [
      'MAILROOM_SMTP_IDLE_MS',
      '30000',
      'MAILROOM_SMTP_IDLE_MS must be a whole number from 1 to 25000, not "30000"',
    ],
    ['MAILROOM_JSON_MAX_VALUES', '0', 'MAILROOM_JSON_MAX_VALUES must be a whole number, at least 1, not "0"'],
    [
      'MAILROOM_BODY_TIMEOUT_SECONDS',
      '90000',
      'MAILROOM_BODY_TIMEOUT_SECONDS must be a whole number from 1 to 86400, not "90000"',
    ],
    [
      'MAILROOM_PUBLIC_CONNECTIONS_PER_ADDRESS',
      'many',
      'MAILROOM_PUBLIC_CONNECTIONS_PER_ADDRESS must be a whole number, at least 1, not "many"',
    ],
    [
      'MAILROOM_SMTP_PORT',
      'none',
      'MAILROOM_SMTP_PORT must be a whole number from 0 to 65535, or off, not "none"',
    ],
    [
      'MAILROOM_SMTP_TLS_CERT',
      '/etc/cert.pem',
      'MAILROOM_SMTP_TLS_CERT and MAILROOM_SMTP_TLS_KEY are set together',
    ],
    ['MAILROOM_SMTPS_PORT', '2587', 'PORT, MAILROOM_SMTP_PORT and MAILROOM_SMTPS_PORT must differ'],
    [
      'MAILROOM_SMTP_MESSAGES_PER_SESSION',
      '0',
      'MAILROOM_SMTP_MESSAGES_PER_SESSION must be a whole number, at least 1, not "0"',
    ],
  ])('refuses %s=%s on one line that names it and what it must be', (name, value, message) => {
    const env: NodeJS.ProcessEnv = { [name]: value }
    if (name === 'DATABASE_URL') env.MAILROOM_SECRET = 's'.repeat(40)
    expect(() => loadConfig(env)).toThrow(message)
    try {
      loadConfig(env)
    } catch (error) {
      expect((error as Error).message).not.toContain('\n')
    }
  })

  it('names every bad setting at once', () => {
    expect(() => loadConfig({ PORT: '70000', LOG_LEVEL: 'verbose' })).toThrow(
      /^invalid settings: PORT must .*; LOG_LEVEL must .*$/,
    )
  })

  it('refuses DATABASE_URL without MAILROOM_SECRET, naming the secret', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u:p@db/x' })).toThrow(/MAILROOM_SECRET is required/)
  })

  it('MAILROOM_PUBLIC_URL defaults to the port the service listens on', () => {
    expect(loadConfig({ PORT: '8025' }).publicUrl).toBe('http://127.0.0.1:8025')
  })

  it.each(['mail.example.com', 'ftp://mail.example.com', 'https://mail.example.com/?a=1'])(
    'refuses MAILROOM_PUBLIC_URL=%s with a message naming the setting',
    (value) => {
      expect(() => loadConfig({ MAILROOM_PUBLIC_URL: value })).toThrow(/MAILROOM_PUBLIC_URL/)
    },
  )
})
