import { describe, expect, it } from 'vitest'
import { delivered, isPushBack, outcomeOfError, outcomeOfSent } from '../../src/smtp/outcome.ts'

/** An error as nodemailer rejects with it: the reply, its code, the command it answered. */
function smtpError(response: string, command: string | undefined, extra: Record<string, unknown> = {}) {
  return Object.assign(new Error(`failed: ${response}`), {
    code: command === 'RCPT TO' ? 'EENVELOPE' : 'EMESSAGE',
    response,
    responseCode: Number(response.slice(0, 3)),
    ...(command === undefined ? {} : { command }),
    ...extra,
  })
}

/** One recipient's refusal at RCPT, as nodemailer lists it. */
function rcptRefusal(recipient: string, response: string) {
  return smtpError(response, 'RCPT TO', { recipient })
}

describe('isPushBack', () => {
  it.each(['MAIL FROM', 'RCPT TO', 'DATA', 'CONN', undefined])(
    'a 421 is push-back at any stage (%s)',
    (command) => {
      expect(isPushBack({ code: 421, text: '421 4.7.0 Try again later', command })).toBe(true)
    },
  )

  it.each([450, 451, 452])('a %i is push-back to MAIL FROM and to the message', (code) => {
    expect(isPushBack({ code, text: `${code} 4.3.0 Try later`, command: 'MAIL FROM' })).toBe(true)
    expect(isPushBack({ code, text: `${code} 4.3.0 Try later`, command: 'DATA' })).toBe(true)
  })

  it.each([450, 451, 452])('a %i at RCPT defers that recipient alone', (code) => {
    expect(isPushBack({ code, text: `${code} 4.2.1 Mailbox busy`, command: 'RCPT TO' })).toBe(false)
  })

  it('a temporary reply to another command, or to none known, is not push-back', () => {
    expect(isPushBack({ code: 450, text: '450 4.7.1 Try later', command: 'EHLO' })).toBe(false)
    expect(isPushBack({ code: 451, text: '451 4.3.0 Try later' })).toBe(false)
  })

  it('a permanent refusal is not push-back, at any stage', () => {
    for (const command of ['MAIL FROM', 'RCPT TO', 'DATA']) {
      expect(isPushBack({ code: 550, text: '550 5.1.1 User unknown', command })).toBe(false)
      expect(isPushBack({ code: 554, text: '554 5.7.1 Message rejected as spam', command })).toBe(false)
    }
  })

  it('a quota reply is push-back whatever its code, by its enhanced code 5.4.5 or its words', () => {
    const quota = [
      '550 5.4.5 Daily user sending quota exceeded.',
      '554 5.2.0 STOREDRV.Submission.Exception:SubmissionQuotaExceededException',
      '454 Throttling failure: Daily message quota exceeded.',
    ]
    for (const text of quota) {
      const code = Number(text.slice(0, 3))
      expect(isPushBack({ code, text, command: 'RCPT TO' })).toBe(true)
    }
  })

  it('a 5xx with another enhanced code than 5.4.5 is no quota reply', () => {
    expect(isPushBack({ code: 550, text: '550 5.4.4 Unable to route', command: 'DATA' })).toBe(false)
  })

  it('a refused over-long line is never push-back, even as a 421', () => {
    expect(isPushBack({ code: 421, text: '421 Error: Command line too long', command: 'RCPT TO' })).toBe(
      false,
    )
    expect(isPushBack({ code: 451, text: '451 Line too long', command: 'DATA' })).toBe(false)
  })
})

describe('outcomeOfSent', () => {
  it('every recipient the server did not refuse got the message', () => {
    const outcome = outcomeOfSent(['a@example.com', 'b@example.com'], {
      accepted: ['a@example.com', 'b@example.com'],
      response: '250 2.0.0 OK queued',
    })
    expect(outcome).toEqual({
      recipients: [
        { address: 'a@example.com', status: 'accepted', reply: null },
        { address: 'b@example.com', status: 'accepted', reply: null },
      ],
      reply: '250 2.0.0 OK queued',
    })
    expect(delivered(outcome)).toBe(true)
  })

  it('a recipient refused at RCPT: for good on a 5xx, deferred on a 4xx, matched case-insensitively', () => {
    const outcome = outcomeOfSent(['A@Example.com', 'b@example.com', 'c@example.com'], {
      rejectedErrors: [
        rcptRefusal('a@example.com', '550 5.1.1 User unknown'),
        rcptRefusal('b@example.com', '452 4.2.2 Mailbox full'),
      ],
      response: '250 OK',
    })
    expect(outcome.recipients).toEqual([
      { address: 'A@Example.com', status: 'refused', reply: '550 5.1.1 User unknown' },
      { address: 'b@example.com', status: 'deferred', reply: '452 4.2.2 Mailbox full' },
      { address: 'c@example.com', status: 'accepted', reply: null },
    ])
    expect(outcome.pushback).toBeUndefined()
  })

  it('matches a refusal reported with the domain in punycode', () => {
    const outcome = outcomeOfSent(['anna@bücher.example'], {
      rejectedErrors: [rcptRefusal('anna@xn--bcher-kva.example', '550 5.1.1 User unknown')],
    })
    expect(outcome.recipients[0]).toMatchObject({ address: 'anna@bücher.example', status: 'refused' })
  })

  it('a quota reply to one recipient defers it and makes the attempt push-back', () => {
    const outcome = outcomeOfSent(['a@example.com', 'b@example.com'], {
      rejectedErrors: [rcptRefusal('a@example.com', '550 5.4.5 Daily user sending quota exceeded.')],
    })
    expect(outcome.recipients[0]).toMatchObject({ status: 'deferred' })
    expect(outcome.pushback).toBe('550 5.4.5 Daily user sending quota exceeded.')
    expect(delivered(outcome)).toBe(true)
  })
})

describe('outcomeOfError', () => {
  const to = ['a@example.com', 'b@example.com']

  it('no reply at all: the server is out of reach, every recipient deferred', () => {
    const error = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:2525'), { code: 'ESOCKET' })
    const outcome = outcomeOfError(to, error)
    expect(outcome.unreachable).toBe('connect ECONNREFUSED 127.0.0.1:2525')
    expect(outcome.pushback).toBeUndefined()
    expect(outcome.recipients.map((r) => r.status)).toEqual(['deferred', 'deferred'])
    expect(delivered(outcome)).toBe(false)
  })

  it('a refused login is the connection out of reach, not a refusal of the message', () => {
    const outcome = outcomeOfError(
      to,
      smtpError('535 5.7.8 Authentication credentials invalid', 'AUTH PLAIN', { code: 'EAUTH' }),
    )
    expect(outcome.unreachable).toBe('535 5.7.8 Authentication credentials invalid')
    expect(outcome.recipients.map((r) => r.status)).toEqual(['deferred', 'deferred'])
  })

  it('a refused STARTTLS is the connection out of reach, never a refusal of the message', () => {
    const outcome = outcomeOfError(
      to,
      smtpError('502 5.5.1 Unrecognized command', 'STARTTLS', { code: 'ETLS' }),
    )
    expect(outcome.unreachable).toBe('STARTTLS refused: 502 5.5.1 Unrecognized command')
    expect(outcome.recipients.map((r) => r.status)).toEqual(['deferred', 'deferred'])
  })

  it('a message larger than the server takes is refused for good, unsent', () => {
    const error = Object.assign(new Error('Message size exceeds the server limit'), { code: 'EMESSAGE' })
    const outcome = outcomeOfError(to, error)
    expect(outcome.recipients.map((r) => r.status)).toEqual(['refused', 'refused'])
    expect(outcome.unreachable).toBeUndefined()
  })

  it('a 421 to the message is push-back, every recipient deferred', () => {
    const outcome = outcomeOfError(to, smtpError('421 4.7.0 Try again later, closing connection', 'DATA'))
    expect(outcome.pushback).toBe('421 4.7.0 Try again later, closing connection')
    expect(outcome.recipients.map((r) => r.status)).toEqual(['deferred', 'deferred'])
  })

  it('a 451 to MAIL FROM is push-back; a 550 to it refuses every recipient for good', () => {
    expect(outcomeOfError(to, smtpError('451 4.3.0 Temporary failure', 'MAIL FROM')).pushback).toBeDefined()
    const refused = outcomeOfError(to, smtpError('550 5.7.1 Sender rejected', 'MAIL FROM'))
    expect(refused.pushback).toBeUndefined()
    expect(refused.recipients.map((r) => r.status)).toEqual(['refused', 'refused'])
  })

  it('every recipient refused at RCPT, each by its own reply: 5xx refused, 4xx deferred, no push-back', () => {
    const error = smtpError('550 5.1.1 User unknown', 'RCPT TO', {
      rejectedErrors: [
        rcptRefusal('a@example.com', '550 5.1.1 User unknown'),
        rcptRefusal('b@example.com', '450 4.2.1 Mailbox busy'),
      ],
    })
    const outcome = outcomeOfError(to, error)
    expect(outcome.recipients.map((r) => r.status)).toEqual(['refused', 'deferred'])
    expect(outcome.pushback).toBeUndefined()
  })

  it('a 421 among the refusals at RCPT makes the attempt push-back', () => {
    const error = smtpError('550 5.1.1 User unknown', 'RCPT TO', {
      rejectedErrors: [
        rcptRefusal('a@example.com', '550 5.1.1 User unknown'),
        rcptRefusal('b@example.com', '421 4.7.0 Too many recipients this hour'),
      ],
    })
    expect(outcomeOfError(to, error).pushback).toBe('421 4.7.0 Too many recipients this hour')
  })

  it('a refused over-long line is refused for good, even as a 421', () => {
    const outcome = outcomeOfError(to, smtpError('421 Error: Command line too long', 'MAIL FROM'))
    expect(outcome.pushback).toBeUndefined()
    expect(outcome.recipients.map((r) => r.status)).toEqual(['refused', 'refused'])
  })

  it('a temporary reply to another command defers every recipient without push-back', () => {
    const outcome = outcomeOfError(to, smtpError('450 4.7.1 Try later', 'EHLO'))
    expect(outcome.pushback).toBeUndefined()
    expect(outcome.unreachable).toBeUndefined()
    expect(outcome.recipients.map((r) => r.status)).toEqual(['deferred', 'deferred'])
  })
})
