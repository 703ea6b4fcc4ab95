/**
 * POST /send: what the SMTP server's answer becomes (200, 429 RATE_LIMITED on push-back, 500
 * INTERNAL_ERROR with the server's reason), that a failed send uses no quota, and no clear-text
 * fallback on 587.
 */
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { humanText } from '../support/matchers.ts'
import { nextUtcMidnight } from '../support/sending.ts'
import { REFUSED, SPAM, useSmtpOutcomes } from '../support/smtp-outcomes.ts'

const app = useTestApp()
const {
  sinks,
  replaceSink,
  account,
  send,
  setReply,
  expectSent,
  expectInternalError,
  expectPushback,
  storePassword,
  lastOutbox,
  usage,
} = useSmtpOutcomes(app)

describe('SMTP rejections → 500 INTERNAL_ERROR with the server reason', () => {
  it('a recipient refused by the server (550 5.1.1): reason in message, outbox record failed', async () => {
    const seeded = await account(sinks.good)
    const before = sinks.good.messages.length
    const message = await expectInternalError(seeded, REFUSED)
    expect(message).toContain('5.1.1')
    expect(sinks.good.messages.length).toBe(before)
    const row = await lastOutbox(seeded)
    expect(row).toEqual({ status: 'failed', error: expect.stringContaining('5.1.1'), sent_at: null })
  })

  it('DATA rejected with 554 (not a quota reply): reason in message', async () => {
    const seeded = await account(sinks.flaky)
    setReply(SPAM)
    const before = sinks.flaky.messages.length
    const message = await expectInternalError(seeded)
    expect(message).toContain('5.7.1 Message rejected as spam')
    expect(sinks.flaky.messages.length).toBe(before)
    expect(await lastOutbox(seeded)).toEqual({
      status: 'failed',
      error: expect.stringContaining('Message rejected as spam'),
      sent_at: null,
    })
  })

  it('an unreachable server (closed after the connection was saved)', async () => {
    const gone = await app.sink({ port: 2525 })
    const seeded = await account(gone)
    await gone.close()
    await expectInternalError(seeded)
    expect((await lastOutbox(seeded))?.status).toBe('failed')
  })

  it('a password changed on the server after the connection was saved', async () => {
    const first = await app.sink({ port: 2525, password: 'first-password' })
    const seeded = await account(first)
    await expectSent(seeded, first)
    await first.close()
    const changed = await replaceSink(first, seeded, { password: 'changed-password' })
    const message = await expectInternalError(seeded)
    expect(message).toContain('5.7.8')
    expect(message).not.toContain('first-password')
    expect(message).not.toContain(Buffer.from('first-password').toString('base64'))
    expect(changed.authAttempts).toBeGreaterThanOrEqual(1)
    expect(changed.messages).toEqual([])
  })

  it('a wrong stored password (updated in the database): 500, nothing delivered', async () => {
    const seeded = await account(sinks.good)
    await expectSent(seeded, sinks.good)
    await storePassword(seeded, 'not-the-password')
    const before = sinks.good.messages.length
    const message = await expectInternalError(seeded)
    expect(message).toContain('Authentication credentials invalid')
    expect(message).not.toContain('not-the-password')
    expect(sinks.good.messages.length).toBe(before)
  })
})

describe('provider push-back → 429 RATE_LIMITED with Retry-After', () => {
  it.each([
    { code: 451, message: '4.7.1 Try again later' },
    { code: 421, message: '4.7.0 Too many messages, slow down' },
    { code: 450, message: '4.2.1 Mailbox temporarily unavailable' },
    { code: 452, message: '4.3.1 Insufficient system storage' },
    { code: 454, message: 'Throttling failure: Daily message quota exceeded' },
    { code: 550, message: '5.4.5 Daily sending quota exceeded' },
    {
      code: 554,
      message:
        '5.2.0 STOREDRV.Submission.Exception:SubmissionQuotaExceededException; Failed to process message due to a permanent exception',
    },
  ])('DATA answered $code $message', async (reply) => {
    const seeded = await account(sinks.flaky)
    setReply(reply)
    const before = sinks.flaky.messages.length
    await expectPushback(seeded)
    expect(sinks.flaky.messages.length).toBe(before)
  })
})

describe('provider push-back before DATA', () => {
  it('a server that starts answering 421 after one message → 429 RATE_LIMITED', async () => {
    const throttling = await app.sink({ port: 2525, behaviour: { throttleAfter: 1 } })
    const seeded = await account(throttling)
    await expectSent(seeded, throttling)
    await expectPushback(seeded)
    expect(throttling.messages.length).toBe(1)
  })
})

describe('a failed send uses no quota', () => {
  it('quota 1 per day: a refused send, then a good send succeeds, then the quota is used', async () => {
    const seeded = await account(sinks.good, { quota: 1, per: 'day' })
    await expectInternalError(seeded, REFUSED)
    expect(await usage(seeded)).toEqual({ quota: 0, daily: 0 })

    await expectSent(seeded, sinks.good)
    expect(await usage(seeded)).toEqual({ quota: 1, daily: 1 })

    const { status, body, retryAfter } = await send(seeded)
    expect(status).toBe(429)
    expect(body).toEqual({
      code: 'QUOTA_EXCEEDED',
      message: humanText,
      details: { limit: 1, used: 1, resetsAt: nextUtcMidnight(Date.now()).toISOString() },
    })
    expect(retryAfter).toMatch(/^[1-9]\d*$/)
    expect(await usage(seeded)).toEqual({ quota: 1, daily: 1 })
  })

  it('quota 1 per day: a push-back, then a good send succeeds', async () => {
    const seeded = await account(sinks.flaky, { quota: 1, per: 'day' })
    setReply({ code: 451, message: '4.7.1 Try again later' })
    await expectPushback(seeded)
    expect(await usage(seeded)).toEqual({ quota: 0, daily: 0 })
    setReply(undefined)
    await expectSent(seeded, sinks.flaky)
    expect(await usage(seeded)).toEqual({ quota: 1, daily: 1 })
  })

  it('an unreachable server leaves the quota and the Free daily count unchanged', async () => {
    const gone = await app.sink({ port: 465 })
    const seeded = await account(gone, { quota: 1, per: 'hour' })
    await gone.close()
    await expectInternalError(seeded)
    await expectInternalError(seeded)
    expect(await usage(seeded)).toEqual({ quota: 0, daily: 0 })
  })
})

describe('certificates and STARTTLS', () => {
  it.each([587, 2525] as const)(
    'a %i server that stops offering STARTTLS after the connection was saved gets neither login nor message',
    async (port) => {
      const original = await app.sink({ port, password: 'starttls-password' })
      const seeded = await account(original)
      await original.close()
      const plain = await replaceSink(original, seeded, {
        password: 'starttls-password',
        offerStartTls: false,
      })
      await expectInternalError(seeded)
      expect(plain.connections).toBeGreaterThanOrEqual(1)
      expect(plain.authAttempts).toBe(0)
      expect(plain.messages).toEqual([])
      expect((await lastOutbox(seeded))?.status).toBe('failed')
    },
  )
})
