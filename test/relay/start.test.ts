import { stat } from 'node:fs/promises'
import path from 'node:path'
import nodemailer from 'nodemailer'
import { describe, expect, it } from 'vitest'
import { freePort } from '../../src/net/free-port.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import { type MailroomProcess, waitFor } from '../support/queue.ts'
import { useMailroomProcesses } from './relay-fixture.ts'

const app = useTestApp()
const processes = useMailroomProcesses(app)

/** The JSON log line whose `msg` is (or matches) `msg`, once the process wrote it. */
function logLine(child: MailroomProcess, msg: string | RegExp): Promise<Record<string, unknown>> {
  return waitFor(
    () => `the line "${msg}" (output: ${child.output()})`,
    () =>
      child
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((line) => (typeof msg === 'string' ? line.msg === msg : msg.test(String(line.msg)))),
    30_000,
  )
}

function startMailroom(env: Record<string, string>): Promise<MailroomProcess> {
  return processes.start(['start', '--no-worker'], env)
}

describe('mailroom start serves the SMTP relay', () => {
  it('says which SMTP ports it listens on, makes a self-signed certificate once, keeps it and names it', async () => {
    const dataDir = await processes.dataDir('mailroom-relay-')
    const [smtp, smtps] = [await freePort(), await freePort()]
    const env = {
      MAILROOM_DATA_DIR: dataDir,
      MAILROOM_SMTP_PORT: String(smtp),
      MAILROOM_SMTPS_PORT: String(smtps),
    }
    const child = await startMailroom(env)
    expect(await logLine(child, 'Mailroom SMTP relay listening')).toMatchObject({
      host: '127.0.0.1',
      starttls: smtp,
      implicitTls: smtps,
    })
    const certificate = path.join(dataDir, 'smtp-relay-tls.pem')
    expect((await logLine(child, /self-signed certificate/)).certificate).toBe(certificate)
    expect((await stat(certificate)).mode & 0o777).toBe(0o600)
    const { key } = await seedAccount(app, { plan: 'pro' })
    const client = nodemailer.createTransport({
      host: '127.0.0.1',
      port: smtps,
      secure: true,
      auth: { user: 'mailroom', pass: key },
      tls: { rejectUnauthorized: false },
    })
    await expect(client.verify()).resolves.toBe(true)
    const made = (await stat(certificate)).mtimeMs
    await child.stop()
    const again = await startMailroom(env)
    await logLine(again, 'Mailroom SMTP relay listening')
    expect((await stat(certificate)).mtimeMs).toBe(made)
  }, 120_000)

  it('serves neither listener when both are off', async () => {
    const child = await startMailroom({ MAILROOM_SMTP_PORT: 'off', MAILROOM_SMTPS_PORT: 'off' })
    await logLine(child, 'Mailroom API and dashboard listening')
    expect(child.output()).not.toContain('SMTP relay')
  }, 60_000)
})
