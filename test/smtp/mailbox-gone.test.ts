import { describe, expect, it } from 'vitest'
import { isMailboxGone, MAILBOX_GONE_PHRASES, mailboxesGone } from '../../src/smtp/mailbox-gone.ts'
import type { AttemptOutcome } from '../../src/smtp/outcome.ts'

describe('isMailboxGone', () => {
  it.each([
    '550 5.1.1 <gone@example.com>: Recipient address rejected: User unknown',
    '550 5.1.2 Host unknown',
    '553 5.1.3 Bad destination mailbox address syntax',
    '550 5.1.6 Recipient mailbox has moved',
    '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
    '550 5.2.1 The email account that you tried to reach is disabled',
    '550-5.1.1 The email account that you tried to reach does not exist.',
    '550 User unknown',
    '550 No such user here',
    '553 sorry, that mailbox does not exist',
  ])('a refusal saying the mailbox is gone: %s', (reply) => {
    expect(isMailboxGone(reply)).toBe(true)
  })

  it.each([
    '550 5.7.1 Message rejected as spam',
    '554 5.7.1 <gone@example.com>: Relay access denied (user unknown)',
    '552 5.2.2 Mailbox full',
    '550 5.1.0 Sender address rejected',
    '450 4.1.1 <gone@example.com>: Recipient address rejected: User unknown in local table',
    '450 User unknown',
    '550 Requested action not taken: mailbox unavailable',
    '550 Message rejected',
    '250 2.1.5 Ok',
  ])('anything else: %s', (reply) => {
    expect(isMailboxGone(reply)).toBe(false)
  })

  it('knows each documented phrase in any case, on a bare 5xx only', () => {
    for (const phrase of MAILBOX_GONE_PHRASES) {
      expect(isMailboxGone(`550 ${phrase.toUpperCase()}`), phrase).toBe(true)
      expect(isMailboxGone(`451 ${phrase}`), phrase).toBe(false)
    }
  })
})

describe('mailboxesGone', () => {
  const refused = (address: string, reply: string) => ({ address, status: 'refused' as const, reply })
  const gone = '550 5.1.1 User unknown'

  it('takes each recipient refused with its own reply at RCPT', () => {
    const outcome: AttemptOutcome = {
      recipients: [
        refused('gone@example.com', gone),
        refused('spam@example.com', '550 5.7.1 Spam'),
        { address: 'ok@example.com', status: 'accepted', reply: null },
        { address: 'later@example.com', status: 'deferred', reply: '450 4.1.1 User unknown' },
      ],
    }
    expect(mailboxesGone(outcome).map((r) => r.address)).toEqual(['gone@example.com'])
  })

  it('takes the one recipient of a message refused at DATA, never several, nor a refusal at MAIL FROM', () => {
    const one = refused('gone@example.com', gone)
    expect(mailboxesGone({ recipients: [one], refusedAt: 'DATA' })).toEqual([one])
    expect(mailboxesGone({ recipients: [one, refused('b@example.com', gone)], refusedAt: 'DATA' })).toEqual(
      [],
    )
    expect(mailboxesGone({ recipients: [one], refusedAt: 'MAIL FROM' })).toEqual([])
  })
})
