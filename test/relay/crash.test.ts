/**
 * The relay answers 250 only once the message is stored: `kill -9` of the service right after
 * that reply loses nothing, and the service started again delivers the message once.
 */
import { once } from 'node:events'
import nodemailer from 'nodemailer'
import { describe, expect, it } from 'vitest'
import { freePort } from '../../src/net/free-port.ts'
import { useTestApp } from '../support/app.ts'
import { type MailroomProcess, outboxRecord, waitFor } from '../support/queue.ts'
import { startSender } from '../support/sending.ts'
import { useMailroomProcesses } from './relay-fixture.ts'

const app = useTestApp()
const processes = useMailroomProcesses(app)

async function startMailroom(args: string[], env: Record<string, string>): Promise<MailroomProcess> {
  const child = await processes.start(args, env)
  // The relay's listeners may open after /health answers.
  await waitFor(
    () => `the relay listening (output: ${child.output()})`,
    () => (child.output().includes('Mailroom SMTP relay listening') ? true : undefined),
    30_000,
  )
  return child
}

describe('kill -9 of the service right after the relay answered 250', () => {
  it('loses nothing: started again, the service delivers the message exactly once', async () => {
    const s = await startSender(app, 'relay-crash', { plan: 'pro' })
    const dataDir = await processes.dataDir('mailroom-relay-crash-')
    const smtps = await freePort()
    const env = { MAILROOM_DATA_DIR: dataDir, MAILROOM_SMTP_PORT: 'off', MAILROOM_SMTPS_PORT: String(smtps) }
    // No worker in the first process: nothing is being sent when it dies, so a second copy
    // could only come from the message being stored twice or sent again.
    const first = await startMailroom(['start', '--no-worker'], env)
    const client = nodemailer.createTransport({
      host: '127.0.0.1',
      port: smtps,
      secure: true,
      auth: { user: 'mailroom', pass: s.key },
      tls: { rejectUnauthorized: false },
    })
    const info = await client.sendMail({
      from: s.from,
      to: 'ada@example.com',
      subject: 'Survives kill -9',
      text: 'Stored before the 250.',
    })
    const exited = once(first.child, 'exit')
    first.child.kill('SIGKILL')
    await exited
    client.close()
    expect(info.response).toMatch(/^250 2\.0\.0 Queued as email \d+ /)
    const id = Number(/Queued as email (\d+) /.exec(info.response)?.[1])

    expect((await outboxRecord(app, s.accountId, id)).status).toBe('queued')
    await startMailroom(['start'], env)
    const sent = await waitFor(
      `email ${id} sent by the restarted service`,
      async () => {
        const record = await outboxRecord(app, s.accountId, id)
        return record.status === 'sent' ? record : undefined
      },
      60_000,
      200,
    )
    expect(sent.message_id).toBe(info.messageId)
    const copies = s.sink.messages.filter((m) => m.headers.get('message-id') === info.messageId)
    expect(copies).toHaveLength(1)
    // The run that sent it ends, and leaves no other behind: nothing of it is still to be sent.
    await waitFor(
      `no queue run left for connection ${s.connectionId}`,
      async () => {
        const [jobs] = await app.services.sql<{ n: number }[]>`
          select count(*)::int as n from graphile_worker.jobs where queue_name = ${`queue:${s.connectionId}`}`
        return jobs?.n === 0 ? true : undefined
      },
      30_000,
      200,
    )
    expect(s.sink.messages.filter((m) => m.headers.get('message-id') === info.messageId)).toHaveLength(1)
  }, 180_000)
})
