/**
 * The overview's bounce and complaint rates: per connection, over the recipients its server
 * answered for good in the last 7 days; bounces are mailboxes said not to exist at RCPT or in a
 * bounce report, complaints are complaint reports; a complaint rate at or above 0.3 % is flagged.
 */
import { describe, expect, it } from 'vitest'
import { addConnection } from '../../src/connections/connections.ts'
import { recordReport } from '../../src/db/reports.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import { suppressingLine } from '../support/bounce-reports.ts'
import { signedIn, textOf } from '../support/dashboard.ts'
import { startSink } from '../support/sending.ts'

const app = useTestApp()

/** An ended email of the connection, as the settlement leaves it: `complained` of `count` recipients complained. */
async function sentEmail(accountId: number, connectionId: number, count: number, complained: number) {
  const recipients = Array.from({ length: count }, (_, i) => ({
    address: `r${i}@example.com`,
    status: i < complained ? 'complained' : 'accepted',
    reply: null,
  }))
  await app.services.sql`
    insert into outbox (account_id, connection_id, status, from_address, to_addresses, subject, message_id,
                        recipients, sent_at)
    values (${accountId}, ${connectionId}, 'sent', 'x@example.com', ${recipients.map((r) => r.address)}, 's',
            ${`<${accountId}.${connectionId}.${count}@example.com>`}, ${app.services.sql.json(recipients)},
            mailroom_now())`
}

describe('the overview’s bounce and complaint rates', () => {
  it('count hard bounces at RCPT and in reports and complaint reports over the recipients answered for good, not policy refusals, soft bounces or older mail', async () => {
    const sink = await startSink(app, {
      rejectRecipients: ['gone@example.com'],
      recipientReplies: { 'policy@example.com': { code: 550, message: '5.7.1 Rejected by policy' } },
    })
    const owner = await seedAccount(app, {
      connection: { ...sink.login, from: 'rates@example.com', rate: 6000 },
    })
    const send = async (to: string[]) => {
      const res = await app.request('/send', { key: owner.key, body: { to, subject: 's', text_body: 't' } })
      expect(res.status).toBe(200)
      return ((await res.json()) as { outboxId: number }).outboxId
    }
    await send(['gone@example.com', 'ok1@example.com'])
    await send(['policy@example.com', 'ok0@example.com'])
    const reported = await send(['ok2@example.com', 'ok3@example.com', 'ok4@example.com', 'ok5@example.com'])
    const [record] = await app.services.sql<{ message_id: string }[]>`
      select message_id from outbox where id = ${reported}`
    const origin = {
      accountId: owner.account.id,
      connectionId: owner.connection?.id as number,
      messageId: record?.message_id as string,
    }
    await recordReport(app.services.sql, origin, [
      suppressingLine('bounced', 'ok2@example.com', 'smtp; 550 5.1.1 User unknown', '5.1.1'),
      suppressingLine('complained', 'ok3@example.com', 'abuse'),
      {
        recipient: 'ok4@example.com',
        kind: 'bounced',
        status: '5.2.2',
        diagnostic: 'mailbox full',
        suppression: null,
      },
    ])
    // Mail that ended more than 7 days ago is not counted.
    const old = await send(['old@example.com'])
    await app.services.sql`
      update outbox set created_at = created_at - interval '9 days', sent_at = sent_at - interval '9 days',
        updated_at = updated_at - interval '9 days'
      where id = ${old}`

    const { browser } = await signedIn(app, { account: owner.account })
    const text = textOf((await browser.get('/dashboard')).html)
    expect(text).toContain('Bounces and complaints, the last 7 days')
    expect(text).toContain('Gmail and Yahoo ask senders to keep complaints under 0.3 %')
    // 8 recipients answered for good; gone (RCPT) and ok2 (report) bounced, ok3 complained.
    expect(text).toContain(
      'rates@example.com 8 recipients sent to Bounce rate 25.00 % 2 bounces Complaint rate 12.50 % at or above the 0.3 % line 1 complaint',
    )
  })

  it('flags a complaint rate of exactly 0.3 %, not one just under, and shows no rate for a connection that sent nothing', async () => {
    const sink = await startSink(app)
    const owner = await seedAccount(app, {
      plan: 'pro',
      connection: { ...sink.login, from: 'on-the-line@example.com' },
    })
    const accountId = owner.account.id
    const under = await addConnection(app.services, {
      accountId,
      ...sink.login,
      from: 'just-under@example.com',
    })
    const idle = await addConnection(app.services, { accountId, ...sink.login, from: 'idle@example.com' })
    await sentEmail(accountId, owner.connection?.id as number, 1000, 3)
    await sentEmail(accountId, under.id, 1001, 3)
    const { browser } = await signedIn(app, { account: owner.account })
    const text = textOf((await browser.get('/dashboard')).html)
    expect(text).toContain(
      'on-the-line@example.com 1000 recipients sent to Bounce rate 0 % 0 bounces Complaint rate 0.30 % at or above the 0.3 % line 3 complaints',
    )
    expect(text).toContain(
      'just-under@example.com 1001 recipients sent to Bounce rate 0 % 0 bounces Complaint rate 0.29 % 3 complaints',
    )
    expect(text).toContain(
      `${idle.from} 0 recipients sent to Bounce rate — 0 bounces Complaint rate — 0 complaints`,
    )
  })
})
