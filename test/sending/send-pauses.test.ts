/**
 * POST /send pauses a connection by itself after repeated provider failures, counting only those
 * that speak for the whole connection, and lifts the pause once its time has passed.
 */
import { describe, expect, it } from 'vitest'
import { listConnections } from '../../src/connections/connections.ts'
import { type SeededAccount, useTestApp } from '../support/app.ts'
import { TIMESTAMP } from '../support/matchers.ts'
import { REFUSED, SPAM, useSmtpOutcomes } from '../support/smtp-outcomes.ts'

const app = useTestApp()
const {
  sinks,
  account,
  setReply,
  expectSent,
  expectInternalError,
  expectPushback,
  expectPaused,
  statusOf,
  expectPauseLeft,
  endPause,
  storePassword,
  aMinuteLater,
  expectFifthFailurePauses,
} = useSmtpOutcomes(app)

describe('connection health: automatic pauses', () => {
  const PUSHBACK = { code: 451, message: '4.7.1 Try again later' }

  /** `n` push-backs a minute apart. */
  async function pushbacks(seeded: SeededAccount, n: number) {
    for (let i = 0; i < n; i++) {
      await expectPushback(seeded)
      await aMinuteLater(seeded)
    }
  }

  it('push-backs within the minute /send asks callers to wait count once: ten in a row (one brief outage) do not pause', async () => {
    const seeded = await account(sinks.flaky)
    setReply(PUSHBACK)
    for (let i = 0; i < 10; i++) await expectPushback(seeded)
    expect(await statusOf(seeded)).toBe('active')
    // That was one. A minute on they count again: three more make four, still active; a fifth pauses.
    await aMinuteLater(seeded)
    await pushbacks(seeded, 3)
    expect(await statusOf(seeded)).toBe('active')
    await expectPushback(seeded)
    expect(await statusOf(seeded)).toBe('paused')
  })

  it('5 consecutive push-backs pause the connection (4 do not); the next send is 403 CONNECTION_PAUSED', async () => {
    const seeded = await account(sinks.flaky)
    setReply(PUSHBACK)
    await pushbacks(seeded, 4)
    expect(await statusOf(seeded)).toBe('active')
    await pushbacks(seeded, 1)

    const [view] = await listConnections(app.services.sql, seeded.account.id)
    expect(view?.status).toBe('paused')
    expect(view?.paused_until).toMatch(TIMESTAMP)
    await expectPauseLeft(seeded, 15)

    setReply(undefined)
    await expectPaused(seeded, sinks.flaky)
  })

  it('4 failures, a success, 4 failures: not paused (the success reset the count)', async () => {
    const seeded = await account(sinks.flaky)
    setReply(PUSHBACK)
    await pushbacks(seeded, 4)
    setReply(undefined)
    await expectSent(seeded, sinks.flaky)
    setReply(PUSHBACK)
    await pushbacks(seeded, 4)
    expect(await statusOf(seeded)).toBe('active')
    setReply(undefined)
    await expectSent(seeded, sinks.flaky)
  })

  it('a refused recipient (550 5.1.1) does not count toward pausing', async () => {
    const seeded = await account(sinks.flaky)
    setReply(PUSHBACK)
    await pushbacks(seeded, 4)
    // Refused at RCPT, before DATA: if it counted it would be the fifth failure.
    await expectInternalError(seeded, REFUSED)
    expect(await statusOf(seeded)).toBe('active')
    setReply(undefined)
    await expectSent(seeded, sinks.flaky)
  })

  it('many refused recipients alone never pause', async () => {
    const seeded = await account(sinks.good)
    for (let i = 0; i < 6; i++) {
      await expectInternalError(seeded, REFUSED)
      // The refusal suppressed the address; taken off the list, the next send tries it again.
      const res = await app.request(`/suppressions/${encodeURIComponent(REFUSED)}`, {
        key: seeded.key,
        method: 'DELETE',
      })
      expect(res.status).toBe(200)
    }
    expect(await statusOf(seeded)).toBe('active')
    await expectSent(seeded, sinks.good)
  })

  it('a non-quota DATA rejection (554 5.7.1) does not count toward pausing', async () => {
    const seeded = await account(sinks.flaky)
    setReply(SPAM)
    for (let i = 0; i < 5; i++) await expectInternalError(seeded)
    expect(await statusOf(seeded)).toBe('active')
    setReply(undefined)
    await expectSent(seeded, sinks.flaky)
  })

  it('5 authentication failures in a row pause the connection', async () => {
    const seeded = await account(sinks.good)
    await storePassword(seeded, 'wrong-password')
    await expectFifthFailurePauses(seeded, () => expectInternalError(seeded))
    // Even with the right password back, the paused connection is not used.
    await storePassword(seeded, sinks.good.password)
    await expectPaused(seeded, sinks.good)
  })

  it('5 unreachable attempts in a row pause the connection', async () => {
    const gone = await app.sink({ port: 587 })
    const seeded = await account(gone)
    await gone.close()
    await expectFifthFailurePauses(seeded, () => expectInternalError(seeded))
    await expectPaused(seeded, gone)
  })

  it('the pause lifts by itself once its time has passed', async () => {
    const seeded = await account(sinks.flaky)
    setReply(PUSHBACK)
    await pushbacks(seeded, 5)
    setReply(undefined)
    await expectPaused(seeded, sinks.flaky)
    await endPause(seeded)
    expect(await statusOf(seeded)).toBe('active')
    await expectSent(seeded, sinks.flaky)
  })

  it('a second automatic pause lasts twice as long as the first (≈30 min after ≈15 min)', async () => {
    const seeded = await account(sinks.flaky)
    setReply(PUSHBACK)
    await pushbacks(seeded, 5)
    const first = await expectPauseLeft(seeded, 15)

    await endPause(seeded)
    // The count starts again after a pause: 4 more failures do not pause.
    await expectFifthFailurePauses(seeded, () => expectPushback(seeded))
    const second = await expectPauseLeft(seeded, 30)
    expect(second).toBeGreaterThan(first * 1.9)
  })
})
