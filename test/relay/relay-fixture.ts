import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import nodemailer from 'nodemailer'
import type SMTPTransport from 'nodemailer/lib/smtp-transport'
import { afterAll, beforeAll, inject } from 'vitest'
import { freePort } from '../../src/net/free-port.ts'
import { type RelayOptions, type RunningRelay, startRelay } from '../../src/relay/relay.ts'
import type { TestApp } from '../support/app.ts'
import { type MailroomProcess, mailroomEnv, spawnMailroom, waitHealthy } from '../support/queue.ts'

/** Starts the relay on the test app's services (free ports, the run's CA-signed certificate) for the file's tests. */
export function useRelay(app: TestApp, options: RelayOptions = {}): { readonly relay: RunningRelay } {
  let running: RunningRelay | undefined
  beforeAll(async () => {
    const tls = inject('tls')
    running = await startRelay(app.services, { port: 0, securePort: 0, tls, ...options })
  })
  afterAll(async () => {
    await running?.stop()
  })
  return {
    get relay() {
      if (!running) throw new Error('the relay is used before it started')
      return running
    },
  }
}

/**
 * `mailroom` processes on the test app's database, each on a free HTTP port, and data
 * directories for them: all stopped and removed after the file's tests.
 */
export function useMailroomProcesses(app: TestApp) {
  const running: MailroomProcess[] = []
  const dirs: string[] = []
  afterAll(async () => {
    await Promise.all(running.map((p) => p.stop()))
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })))
  })
  return {
    async dataDir(prefix: string): Promise<string> {
      const dir = await mkdtemp(path.join(os.tmpdir(), prefix))
      dirs.push(dir)
      return dir
    },
    /** Started with `args` and `env`, once its /health answers. */
    async start(args: string[], env: Record<string, string>): Promise<MailroomProcess> {
      const port = await freePort()
      const child = spawnMailroom(
        args,
        mailroomEnv(app.db.url, { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env }),
      )
      running.push(child)
      await waitHealthy(child, `http://127.0.0.1:${port}`)
      return child
    },
  }
}

export type Mode = 'starttls' | 'implicit'

export interface ClientOptions {
  mode?: Mode
  method?: 'PLAIN' | 'LOGIN'
  /** Connect from this local address (a loopback one other than 127.0.0.1, say). */
  localAddress?: string
  /** Reach the relay on this address rather than 127.0.0.1. */
  host?: string
  /** Send without STARTTLS (a client on this host may AUTH in clear text). */
  clearText?: boolean
}

/** A nodemailer transport set up as an app would: host, port, user `mailroom`, an API key. */
export function relayClient(relay: RunningRelay, key: string, options: ClientOptions = {}) {
  const mode = options.mode ?? 'starttls'
  const port = mode === 'implicit' ? relay.ports.smtps : relay.ports.smtp
  if (port === null) throw new Error(`the relay's ${mode} listener is off`)
  const settings: SMTPTransport.Options = {
    host: options.host ?? '127.0.0.1',
    port,
    secure: mode === 'implicit',
    requireTLS: mode === 'starttls' && !options.clearText,
    ignoreTLS: options.clearText === true,
    auth: { user: 'mailroom', pass: key },
    ...(options.method ? { authMethod: options.method } : {}),
    ...(options.localAddress ? { localAddress: options.localAddress } : {}),
    tls: { servername: 'localhost' },
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
  }
  return nodemailer.createTransport(settings)
}

/** What a refused nodemailer call carried: the server's reply line. */
export async function refusal(
  attempt: Promise<unknown>,
): Promise<{ responseCode: number; response: string }> {
  try {
    await attempt
  } catch (error) {
    const { responseCode, response } = error as { responseCode?: number; response?: string }
    if (responseCode === undefined || response === undefined) throw error
    return { responseCode, response }
  }
  throw new Error('the relay accepted what it should have refused')
}

/** A small message as an app composes it. */
export function plainMessage(from: string, to: string[], subject = 'Hello over SMTP') {
  return { from, to, subject, text: 'Sent through the relay.' }
}
