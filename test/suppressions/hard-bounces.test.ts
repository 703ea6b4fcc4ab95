/**
 * A recipient whose server says its mailbox does not exist is suppressed by the statement that
 * settles the attempt; other refusals are not.
 */
import { describe, expect, it } from 'vitest'
import { suppressionStrength } from '../../src/suppressions/strength.ts'
import { useTestApp } from '../support/app.ts'
import { postSend, startSender } from '../support/sending.ts'

const app = useTestApp()

async function entries(accountId: number) {
  return app.services.sql<
    { email: string; reason: string; scope: string; detail: string; source_type: string; source_id: number }[]
  >`
    select email, reason, scope, detail, source_type, source_id from suppressions
    where account_id = ${accountId} order by email`
}

describe('hard bounces at RCPT', () => {
  it('a 550 5.1.1 recipient becomes a hard_bounce of scope all, sourced to the email; 5.7.1, 5.2.2 and 4xx do not', async () => {
    const s = await startSender(app, 'bounce', {
      behaviour: {
        recipientReplies: {
          'gone@example.com': { code: 550, message: '5.1.1 <gone@example.com>: User unknown' },
          'spam@example.com': { code: 550, message: '5.7.1 Rejected as spam' },
          'full@example.com': { code: 552, message: '5.2.2 Mailbox full' },
          'busy@example.com': { code: 450, message: '4.2.1 Mailbox busy' },
        },
      },
    })
    const sent = await postSend(app, s.key, {
      to: ['ok@example.com', 'Gone@example.com', 'spam@example.com', 'full@example.com', 'busy@example.com'],
      subject: 'Hello',
      text_body: 'Hi',
    })
    expect(sent.status).toBe(200)
    expect(await entries(s.accountId)).toEqual([
      {
        email: 'Gone@example.com',
        reason: 'hard_bounce',
        scope: 'all',
        detail: expect.stringMatching(/^550 5\.1\.1 /),
        source_type: 'email',
        source_id: sent.body.outboxId,
      },
    ])
  })

  it('a message refused for its only recipient, sent nowhere, still records the suppression', async () => {
    const s = await startSender(app, 'bounce', { behaviour: { rejectRecipients: ['nobody@example.com'] } })
    const sent = await postSend(app, s.key, { to: 'nobody@example.com', subject: 'Hello', text_body: 'Hi' })
    expect(sent.status).toBe(500)
    expect((await entries(s.accountId)).map((e) => [e.email, e.reason])).toEqual([
      ['nobody@example.com', 'hard_bounce'],
    ])
  })

  it('a bare 550 counts only when it says the mailbox does not exist', async () => {
    const s = await startSender(app, 'bounce', {
      behaviour: {
        recipientReplies: {
          'nouser@example.com': { code: 550, message: 'No such user here' },
          'policy@example.com': { code: 550, message: 'Message rejected by policy' },
        },
      },
    })
    const sent = await postSend(app, s.key, {
      to: ['ok@example.com', 'nouser@example.com', 'policy@example.com'],
      subject: 'Hello',
      text_body: 'Hi',
    })
    expect(sent.status).toBe(200)
    expect((await entries(s.accountId)).map((e) => e.email)).toEqual(['nouser@example.com'])
  })

  it('a hard bounce replaces a weaker manual entry, and never a complaint', async () => {
    const s = await startSender(app, 'bounce', {
      behaviour: { rejectRecipients: ['m@example.com', 'c@example.com'] },
    })
    await app.request('/suppressions', {
      key: s.key,
      body: { emails: ['m@example.com'], scope: 'marketing' },
    })
    const complaint = suppressionStrength({ reason: 'complaint', scope: 'all' })
    await app.services.sql`
      insert into suppressions (account_id, email, reason, scope, strength, source_type)
      values (${s.accountId}, 'c@example.com', 'complaint', 'all', ${complaint}, 'email')`
    // Delivered to ok@ so the refusals are the recipients' own.
    await postSend(app, s.key, {
      to: ['ok@example.com', 'm@example.com', 'c@example.com'],
      subject: 'Hi',
      text_body: 'Hi',
    })
    expect((await entries(s.accountId)).map((e) => [e.email, e.reason, e.scope])).toEqual([
      ['c@example.com', 'complaint', 'all'],
      ['m@example.com', 'hard_bounce', 'all'],
    ])
  })
})
