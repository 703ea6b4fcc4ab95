/**
 * The worker reads every connection's mailbox on its own, every minute: a report put into the
 * mailbox becomes the email's history with no one asking for a reading.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { dsnReport } from '../support/bounce-reports.ts'
import { startDovecot, type TestDovecot } from '../support/dovecot.ts'
import { senderWithMailbox, sentEmail } from '../support/mailbox-reading.ts'
import { waitFor } from '../support/queue.ts'

const app = useTestApp()
let server: TestDovecot

beforeAll(async () => {
  server = await startDovecot(inject('tls'))
})
afterAll(async () => {
  await app.stopWorkers()
  await server?.stop()
})

describe("the worker's minute", () => {
  it('reads a bounce that arrived in the mailbox into the history', { timeout: 150_000 }, async () => {
    const s = await senderWithMailbox(app, server, server.user)
    const email = await sentEmail(app, s, { to: 'gone@example.com' })
    const recipients = [{ email: 'gone@example.com', status: '5.1.1', diagnostic: '550 5.1.1 User unknown' }]
    await server.append(s.mailbox, dsnReport({ messageId: email.messageId, recipients }))
    await app.worker()

    // The first minute's boundary may be a moment away or a whole minute: two are allowed.
    const reported = await waitFor(
      'the bounce in the history',
      async () => {
        const [row] = await app.db.sql<{ kind: string }[]>`
          select kind from outbox_reports where outbox_id = ${email.id}`
        return row
      },
      130_000,
    )
    expect(reported.kind).toBe('bounced')
  })
})
