import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config.ts'

describe('settings (rulings: names and operator interface)', () => {
  it('needs none: every setting has a default', () => {
    expect(loadConfig({})).toEqual({
      port: 3000,
      host: '127.0.0.1',
      databaseUrl: undefined,
      dataDir: path.resolve('.mailroom'),
      secret: undefined,
      allowPrivateSmtpHosts: false,
      logLevel: 'info',
      bodyLimitBytes: 10 * 1024 * 1024,
      ehloName: os.hostname(),
      queueLifetimeHours: 72,
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
        LOG_LEVEL: 'debug',
        MAILROOM_BODY_LIMIT_BYTES: '2048',
        MAILROOM_EHLO_NAME: 'mta.example.com',
        MAILROOM_QUEUE_LIFETIME_HOURS: '120',
        MAILROOM_PUBLIC_URL: 'https://mail.example.com/',
        MAILROOM_TRUST_PROXY: '1',
      }),
    ).toEqual({
      port: 8080,
      host: '0.0.0.0',
      databaseUrl: 'postgres://u:p@db.example:5432/mailroom',
      dataDir: '/var/lib/mailroom',
      secret: 's'.repeat(40),
      allowPrivateSmtpHosts: true,
      logLevel: 'debug',
      bodyLimitBytes: 2048,
      ehloName: 'mta.example.com',
      queueLifetimeHours: 120,
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

  it('MAILROOM_PUBLIC_URL defaults to the port the service listens on', () => {
    expect(loadConfig({ PORT: '8025' }).publicUrl).toBe('http://127.0.0.1:8025')
  })

  it.each(['mail.example.com', 'ftp://mail.example.com', 'https://mail.example.com/?a=1'])(
    'refuses MAILROOM_PUBLIC_URL=%s with a message naming the setting',
    (value) => {
      expect(() => loadConfig({ MAILROOM_PUBLIC_URL: value })).toThrow(/MAILROOM_PUBLIC_URL/)
    },
  )

  it.each(['abc', '-1', '3.5'])('refuses PORT=%s with a message naming the setting', (value) => {
    expect(() => loadConfig({ PORT: value })).toThrow(/PORT/)
  })
})
