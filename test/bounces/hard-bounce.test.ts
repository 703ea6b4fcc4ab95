import { describe, expect, it } from 'vitest'
import { isHardBounce, type ReportedRecipient, readReport } from '../../src/bounces/report.ts'
import { dsnReport, eximBounce, gmailBounce } from '../support/bounce-reports.ts'

function failed(status: string | null, diagnostic: string | null): ReportedRecipient {
  return { email: 'bob@example.org', action: 'failed', status, diagnostic }
}

describe('isHardBounce', () => {
  it.each([
    ['5.1.1', '550 5.1.1 <bob@example.org>: Recipient address rejected: User unknown'],
    ['5.1.10', '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup'],
    ['5.2.1', '550 5.2.1 The email account that you tried to reach is disabled'],
    ['5.1.2', null],
    ['5.1.3', null],
    ['5.1.6', null],
  ])('a failed recipient with status %s is a hard bounce', (status, diagnostic) => {
    expect(isHardBounce(failed(status, diagnostic))).toBe(true)
  })

  it.each([
    ['5.2.2', '552 5.2.2 Mailbox full'],
    ['5.7.1', '550 5.7.1 Message rejected as spam (user unknown to us)'],
    ['5.1.0', '550 5.1.0 Sender address rejected'],
    ['4.1.1', '450 4.1.1 <bob@example.org>: Recipient address rejected: User unknown in local table'],
    ['4.2.2', '452 4.2.2 Mailbox full'],
  ])('a recipient with status %s is no hard bounce', (status, diagnostic) => {
    expect(isHardBounce(failed(status, diagnostic))).toBe(false)
  })

  it('a bare 5xx counts only when its text says the mailbox does not exist', () => {
    expect(isHardBounce(failed(null, '550 user unknown'))).toBe(true)
    expect(isHardBounce(failed(null, '550 mailbox unavailable'))).toBe(false)
    expect(isHardBounce(failed(null, '450 user unknown'))).toBe(false)
    expect(isHardBounce(failed(null, null))).toBe(false)
  })

  it('a status naming no cause (5.0.0) defers to the reply quoted with it', () => {
    expect(isHardBounce(failed('5.0.0', '550 user unknown'))).toBe(true)
    expect(isHardBounce(failed('5.0.0', '550 5.1.1 no such user'))).toBe(true)
    expect(isHardBounce(failed('5.0.0', '550 mailbox unavailable'))).toBe(false)
  })

  it('a recipient that was only delayed, or of no known action, is no hard bounce', () => {
    expect(isHardBounce({ ...failed('5.1.1', '550 5.1.1 no such user'), action: 'delayed' })).toBe(false)
    expect(isHardBounce({ ...failed('5.1.1', null), action: null })).toBe(false)
  })
})

describe('hard bounces as reports give them', () => {
  it('a DSN of 5.1.1 is hard; one of 5.7.1 is not', async () => {
    const report = await readReport(
      Buffer.from(
        dsnReport({
          messageId: '<m@sender.example>',
          recipients: [
            { email: 'gone@example.org', status: '5.1.1', diagnostic: '550 5.1.1 User unknown' },
            {
              email: 'blocked@example.org',
              status: '5.7.1',
              diagnostic: '550 5.7.1 Message rejected as spam',
            },
          ],
        }),
      ),
    )
    expect(report?.recipients.map((r) => [r.email, isHardBounce(r)])).toEqual([
      ['gone@example.org', true],
      ['blocked@example.org', false],
    ])
  })

  it("a notice's bare 550 user unknown is hard; its bare 550 mailbox unavailable is not", async () => {
    const gone = await readReport(
      Buffer.from(eximBounce({ messageId: null, recipient: 'a@example.org', reply: '550 user unknown' })),
    )
    const unavailable = await readReport(
      Buffer.from(
        gmailBounce({ messageId: null, recipient: 'a@example.org', reply: '550 mailbox unavailable' }),
      ),
    )
    expect(gone?.recipients.map(isHardBounce)).toEqual([true])
    expect(unavailable?.recipients.map(isHardBounce)).toEqual([false])
  })
})
