/**
 * A reading of a connection's mailbox, as the worker's task runs it: what suppresses and what
 * does not, what is left in the folder and counted, the switch that keeps handled reports in
 * place, a login that fails without stopping mail, a folder renumbered, and a report read twice.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { applyReport } from '../../src/bounces/effects.ts'
import { getMailbox, setMailbox } from '../../src/connections/mailbox.ts'
import { sealPassword } from '../../src/smtp/secret-box.ts'
import { useTestApp } from '../support/app.ts'
import { arfReport, dsnReport } from '../support/bounce-reports.ts'
import { startDovecot, type TestDovecot } from '../support/dovecot.ts'
import { captureLogs } from '../support/log-capture.ts'
import {
  counted,
  folderMessages,
  type MailboxSender,
  readOnce,
  senderWithMailbox,
  sentEmail,
} from '../support/mailbox-reading.ts'
import { enqueued, waitFor } from '../support/queue.ts'

const app = useTestApp()
let server: TestDovecot

beforeAll(async () => {
  const users = [
    'soft',
    'left',
    'staying',
    'failing',
    'renumbered',
    'twice',
    'redacted',
    'hostile',
    'resaved',
  ].map((u) => `${u}@example.com`)
  server = await startDovecot(inject('tls'), users as [string, ...string[]])
})
afterAll(() => server?.stop())

function user(n: number) {
  const found = server.users[n]
  if (!found) throw new Error(`no mailbox user ${n}`)
  return found
}

function bounce(messageId: string, email: string, status: string, diagnostic: string) {
  return dsnReport({ messageId, recipients: [{ email, status, diagnostic }] })
}

/** An email of the sender's sent to `to`, and a bounce of it from `to`'s server in the sender's folder. */
async function bouncedInFolder(s: MailboxSender, to: string, status: string, reply: string) {
  const email = await sentEmail(app, s, { to })
  await server.append(s.mailbox, bounce(email.messageId, to, status, reply))
  return email
}

async function emailShown(key: string, id: number) {
  const res = await app.request(`/emails/${id}`, { key })
  return ((await res.json()) as { email: { history: { type: string }[]; recipients: unknown[] } }).email
}

async function reportRows(outboxId: number): Promise<number> {
  const [row] = await app.db.sql<{ n: number }[]>`
    select count(*)::int as n from outbox_reports where outbox_id = ${outboxId}`
  return row?.n ?? 0
}

describe('a reading of a connection mailbox', () => {
  it('records a soft bounce (a full mailbox) in the history without suppressing the address', async () => {
    const s = await senderWithMailbox(app, server, user(0))
    const email = await bouncedInFolder(s, 'full@example.com', '5.2.2', '552 5.2.2 Mailbox full')

    expect(await readOnce(app, s.connectionId)).toEqual({ read: true, handled: 1, unmatched: 0, other: 0 })
    const shown = await emailShown(s.key, email.id)
    expect(shown.history.at(-1)).toMatchObject({
      type: 'bounced',
      recipient: 'full@example.com',
      status: '5.2.2',
      diagnostic: '552 5.2.2 Mailbox full',
      suppressed: false,
    })
    expect(shown.recipients).toEqual([
      { email: 'full@example.com', status: 'bounced', reply: '552 5.2.2 Mailbox full' },
    ])
    const suppression = await app.request('/suppressions/full%40example.com', { key: s.key })
    expect(suppression.status).toBe(404)
    expect(
      await counted(app, 'mailroom_bounces_total', { kind: 'soft', connection: String(s.connectionId) }),
    ).toBe(1)
  })

  it('leaves a report for no email of the account and other mail unseen in place, and counts them', async () => {
    const s = await senderWithMailbox(app, server, user(1))
    await server.append(
      s.mailbox,
      bounce('<not-ours@elsewhere.example>', 'x@example.com', '5.1.1', '550 5.1.1 unknown'),
    )
    await server.append(s.mailbox, 'From: friend@example.com\r\nSubject: Lunch?\r\n\r\nAre you free?\r\n')

    expect(await readOnce(app, s.connectionId)).toEqual({ read: true, handled: 0, unmatched: 1, other: 1 })
    const inbox = await folderMessages(server, s.mailbox)
    expect(inbox).toHaveLength(2)
    expect(inbox.some((m) => m.seen)).toBe(false)
    expect(await getMailbox(app.services.sql, s.connectionId)).toMatchObject({
      unmatched_reports: 1,
      other_messages: 1,
      failure: null,
      read_at: expect.any(String),
    })
    const connection = String(s.connectionId)
    expect(await counted(app, 'mailroom_mailbox_messages_total', { outcome: 'unmatched', connection })).toBe(
      1,
    )
    expect(await counted(app, 'mailroom_mailbox_messages_total', { outcome: 'other', connection })).toBe(1)
    // Read once: the next reading starts after them.
    expect(await readOnce(app, s.connectionId)).toEqual({ read: true, handled: 0, unmatched: 0, other: 0 })
  })

  it('marks a handled report seen and leaves it in the folder when moving is off', async () => {
    const s = await senderWithMailbox(app, server, user(2), { moveHandled: false })
    await bouncedInFolder(s, 'gone@example.com', '5.1.1', '550 5.1.1 User unknown')

    expect(await readOnce(app, s.connectionId)).toMatchObject({ read: true, handled: 1 })
    expect(await folderMessages(server, s.mailbox)).toEqual([{ subject: expect.any(String), seen: true }])
    expect(await folderMessages(server, s.mailbox, ['Mailroom', 'Processed'])).toEqual([])
  })

  it('records a login that fails on the connection, logged without the password, and mail is still sent', {
    timeout: 30_000,
  }, async () => {
    const s = await senderWithMailbox(app, server, user(3))
    // The owner changed the mailbox's password at the provider since it was saved.
    const wrong = 'wrong-password-4f9a'
    await app.db
      .sql`update connection_mailboxes set password_encrypted = ${sealPassword(app.services.secret, wrong)}
      where connection_id = ${s.connectionId}`
    const logs = captureLogs()

    const reading = await readOnce(app, s.connectionId, logs.log)
    expect(reading).toEqual({ read: false, failure: expect.stringContaining('refused the login') })
    expect(await getMailbox(app.services.sql, s.connectionId)).toMatchObject({
      failure: expect.stringContaining('refused the login'),
      failed_at: expect.any(String),
    })
    expect(logs.text()).toContain('connection mailbox could not be read')
    expect(logs.text()).not.toContain(wrong)
    expect(
      await counted(app, 'mailroom_mailbox_login_failures_total', { connection: String(s.connectionId) }),
    ).toBe(1)

    await app.worker()
    const id = await enqueued(app, s.key, { to: 'still@example.com', subject: 'Still sent', text_body: 'x' })
    await waitFor('the queued email sent', async () => {
      const [row] = await app.db.sql<{ status: string }[]>`select status from outbox where id = ${id}`
      return row?.status === 'sent' ? row : undefined
    })
    await app.stopWorkers()
  })

  it('reads the folder anew when its UIDVALIDITY changed', async () => {
    const s = await senderWithMailbox(app, server, user(4))
    const email = await bouncedInFolder(s, 'gone@example.com', '5.1.1', '550 5.1.1 User unknown')
    // Where a reading of the folder before it was rebuilt had stopped: far past its new UIDs.
    await app.db.sql`update connection_mailboxes set uidvalidity = 1, last_uid = 1000
      where connection_id = ${s.connectionId}`

    expect(await readOnce(app, s.connectionId)).toMatchObject({ read: true, handled: 1 })
    expect(await reportRows(email.id)).toBe(1)
  })

  it('adds nothing when it reads a report a second time', async () => {
    const s = await senderWithMailbox(app, server, user(5), { moveHandled: false })
    const hook = { url: 'http://127.0.0.1:9/hooks', events: ['email.bounced'] }
    expect((await app.request('/webhooks', { method: 'POST', key: s.key, body: hook })).status).toBe(201)
    const email = await bouncedInFolder(s, 'gone@example.com', '5.1.1', '550 5.1.1 User unknown')

    await readOnce(app, s.connectionId)
    // As after a crash between recording a report and moving the cursor past it.
    await app.db.sql`update connection_mailboxes set last_uid = 0 where connection_id = ${s.connectionId}`
    expect(await readOnce(app, s.connectionId)).toMatchObject({ read: true, handled: 1 })

    expect(await reportRows(email.id)).toBe(1)
    const shown = await emailShown(s.key, email.id)
    expect(shown.history.filter((e) => e.type === 'bounced')).toHaveLength(1)
    const events = await app.db.sql`
      select 1 from webhook_events where account_id = ${s.accountId} and type = 'email.bounced'`
    expect(events).toHaveLength(1)
    expect(
      await counted(app, 'mailroom_bounces_total', { kind: 'hard', connection: String(s.connectionId) }),
    ).toBe(1)
  })

  it("takes a complaint that names no one for its email's only recipient, and leaves it when there were several", async () => {
    const s = await senderWithMailbox(app, server, user(6))
    const single = await sentEmail(app, s, { to: 'Ann@example.com' })
    const several = await sentEmail(app, s, { to: ['bob@example.com', 'cat@example.com'] })
    // The feedback loop redacted the address, in its own fields and in the returned message.
    const redacted = (messageId: string, recipient: string) =>
      arfReport({ messageId, recipient, namesRecipient: false }).replace(
        `To: ${recipient}\r\n`,
        'To: redacted\r\n',
      )
    await server.append(s.mailbox, redacted(single.messageId, 'Ann@example.com'))
    await server.append(s.mailbox, redacted(several.messageId, 'bob@example.com'))

    expect(await readOnce(app, s.connectionId)).toEqual({ read: true, handled: 1, unmatched: 1, other: 0 })
    expect((await emailShown(s.key, single.id)).history.at(-1)).toMatchObject({
      type: 'complained',
      recipient: 'ann@example.com',
      suppressed: true,
    })
    expect(await reportRows(several.id)).toBe(0)
  })

  it('records a report whose text holds characters the database cannot, rather than failing on it every minute', async () => {
    const s = await senderWithMailbox(app, server, user(7))
    const email = await sentEmail(app, s, { to: 'gone@example.com' })
    // IMAP carries no NUL, but a server with BINARY may; a parser hands on what it was given.
    const report = {
      kind: 'bounce' as const,
      format: 'dsn' as const,
      messageId: email.messageId,
      recipients: [
        {
          email: 'gone@example.com',
          action: 'failed',
          status: '5.1.1',
          diagnostic: '550 no\u0000such \ud800user',
        },
      ],
    }
    const from = { accountId: s.accountId, connectionId: s.connectionId }
    expect(await applyReport(app.services.sql, from, report)).toMatchObject({ fate: 'handled' })
    expect((await emailShown(s.key, email.id)).history.at(-1)).toMatchObject({
      type: 'bounced',
      diagnostic: '550 no\uFFFDsuch \uFFFDuser',
    })
  })

  it('keeps its place when the same mailbox is saved again, and reads another folder from its start', async () => {
    const u = user(8)
    const s = await senderWithMailbox(app, server, u)
    await server.append(u, 'Subject: Lunch?\r\n\r\nAre you free?\r\n')
    await server.append(u, 'Subject: Filed away\r\n\r\nx\r\n', 'Archive')
    expect(await readOnce(app, s.connectionId)).toMatchObject({ other: 1 })

    const login = { host: server.host, port: 993, username: u.username, password: u.password }
    await setMailbox(app.services, s.connectionId, login)
    expect(await readOnce(app, s.connectionId)).toMatchObject({ other: 0 })
    const [kept] = await app.db.sql<{ uidvalidity: string }[]>`
      select uidvalidity::text from connection_mailboxes where connection_id = ${s.connectionId}`
    await setMailbox(app.services, s.connectionId, { ...login, folder: 'Archive' })
    const [reset] = await app.db.sql<{ uidvalidity: string | null }[]>`
      select uidvalidity::text from connection_mailboxes where connection_id = ${s.connectionId}`
    expect(kept?.uidvalidity).not.toBeNull()
    expect(reset?.uidvalidity).toBeNull()
    expect(await readOnce(app, s.connectionId)).toMatchObject({ other: 1 })
  })
})
