import { describe, expect, it } from 'vitest'
import { defaultRetryPolicy, type RetryState } from '../../src/queue/retry-policy.ts'
import type { Delivery } from '../../src/sending/deliver.ts'
import { type QueuedAttempt, settlementOf } from '../../src/sending/settlement.ts'
import type { RecipientOutcome } from '../../src/smtp/outcome.ts'
import { suppressionStrength } from '../../src/suppressions/strength.ts'

const SECOND = 1000
const MINUTE = 60 * SECOND
const policy = defaultRetryPolicy(72)
const HARD_BOUNCE = suppressionStrength({ reason: 'hard_bounce', scope: 'all' })

const accepted = (address: string): RecipientOutcome => ({ address, status: 'accepted', reply: null })
const refused = (address: string, reply = '550 5.1.1 User unknown'): RecipientOutcome => ({
  address,
  status: 'refused',
  reply,
})
const deferred = (address: string, reply = '450 4.2.1 Mailbox busy'): RecipientOutcome => ({
  address,
  status: 'deferred',
  reply,
})

function queued(
  envelope: string[],
  earlier: RecipientOutcome[] | null = null,
  retry: Partial<RetryState> = {},
): QueuedAttempt {
  return {
    path: 'queue',
    envelope,
    earlier,
    retry: { failures: 0, deferrals: 0, ageMs: 0, ...retry },
    policy,
  }
}

describe('settlementOf, POST /send', () => {
  it('sent to everyone: sent, its units spent', () => {
    const recipients = [accepted('a@example.com')]
    expect(settlementOf({ recipients }, { path: 'send' })).toEqual({
      recipients,
      settlement: { status: 'sent', error: null },
      giveBack: false,
    })
  })

  it('taken for some: failed with who was refused, its units spent all the same', () => {
    const recipients = [accepted('a@example.com'), refused('b@example.com')]
    expect(settlementOf({ recipients }, { path: 'send' })).toEqual({
      recipients,
      settlement: {
        status: 'failed',
        error: 'Delivered to 1 of 2 recipients; b@example.com: 550 5.1.1 User unknown',
      },
      giveBack: false,
      hardBounces: [{ email: 'b@example.com', detail: '550 5.1.1 User unknown', strength: HARD_BOUNCE }],
    })
  })

  it('suppresses only the recipients whose mailbox is gone, and no one when none is', () => {
    const recipients = [
      refused('a@example.com'),
      refused('b@example.com', '550 5.7.1 Spam'),
      deferred('c@example.com'),
    ]
    expect(settlementOf({ recipients }, { path: 'send' }).hardBounces).toEqual([
      { email: 'a@example.com', detail: '550 5.1.1 User unknown', strength: HARD_BOUNCE },
    ])
    const policyOnly = [accepted('a@example.com'), refused('b@example.com', '550 5.7.1 Spam')]
    expect(settlementOf({ recipients: policyOnly }, { path: 'send' })).not.toHaveProperty('hardBounces')
    expect(
      settlementOf({ recipients }, queued(['a@example.com', 'b@example.com', 'c@example.com'])).hardBounces,
    ).toEqual([{ email: 'a@example.com', detail: '550 5.1.1 User unknown', strength: HARD_BOUNCE }])
  })

  it('push-back: failed, units back, key freed for a retry, with the provider’s reply', () => {
    const outcome: Delivery = {
      recipients: [deferred('a@example.com', '421 Slow down')],
      pushback: '421 Slow down',
    }
    expect(settlementOf(outcome, { path: 'send' })).toMatchObject({
      settlement: { status: 'failed', error: '421 Slow down', releaseKey: true },
      giveBack: true,
    })
  })

  it('every recipient deferred: failed, units back, key freed', () => {
    const outcome = { recipients: [deferred('a@example.com'), deferred('b@example.com')] }
    expect(settlementOf(outcome, { path: 'send' }).settlement).toMatchObject({
      status: 'failed',
      releaseKey: true,
    })
  })

  it('refused for good, or some refused and the rest deferred: the key is kept', () => {
    const refusedAll = { recipients: [refused('a@example.com')] }
    expect(settlementOf(refusedAll, { path: 'send' })).toMatchObject({
      settlement: { status: 'failed', error: '550 5.1.1 User unknown', releaseKey: false },
      giveBack: true,
    })
    const mixed = { recipients: [refused('a@example.com'), deferred('b@example.com')] }
    expect(settlementOf(mixed, { path: 'send' }).settlement).toMatchObject({ releaseKey: false })
  })

  it('the server out of reach: the key is kept (the cause needs changing first)', () => {
    const outcome = { recipients: [deferred('a@example.com', 'ECONNREFUSED')], unreachable: 'ECONNREFUSED' }
    expect(settlementOf(outcome, { path: 'send' })).toMatchObject({
      settlement: { status: 'failed', error: 'ECONNREFUSED', releaseKey: false },
      giveBack: true,
    })
  })

  it('no reply for any recipient: says the server did not take it', () => {
    const outcome = { recipients: [{ address: 'a@example.com', status: 'refused', reply: null } as const] }
    expect(settlementOf(outcome, { path: 'send' }).settlement.error).toBe('not delivered')
    expect(settlementOf({ recipients: [] }, { path: 'send' }).settlement).toMatchObject({
      error: 'The SMTP server did not take the message',
    })
  })
})

describe('settlementOf, a queued message', () => {
  const envelope = ['a@example.com', 'b@example.com']

  it('delivered to everyone at its first attempt: sent, units spent, nothing else', () => {
    const recipients = envelope.map(accepted)
    expect(settlementOf({ recipients }, queued(envelope))).toEqual({
      recipients,
      settlement: { status: 'sent', error: null },
      giveBack: false,
    })
  })

  it('a later attempt delivering the deferred rest gives its units back: the first delivery spent them', () => {
    const earlier = [accepted('a@example.com'), deferred('b@example.com')]
    const settled = settlementOf({ recipients: [accepted('b@example.com')] }, queued(envelope, earlier))
    expect(settled.recipients).toEqual(envelope.map(accepted))
    expect(settled.settlement).toEqual({ status: 'sent', error: null })
    expect(settled.giveBack).toBe(true)
  })

  it('keeps each recipient’s earlier outcome where this attempt did not try it', () => {
    const earlier = [refused('a@example.com'), deferred('b@example.com')]
    const settled = settlementOf({ recipients: [accepted('B@example.com')] }, queued(envelope, earlier))
    expect(settled.recipients).toEqual([refused('a@example.com'), accepted('B@example.com')])
    expect(settled.settlement).toEqual({
      status: 'failed',
      error: 'Delivered to 1 of 2 recipients; a@example.com: 550 5.1.1 User unknown',
    })
  })

  it('a deferred recipient is queued again on the failure schedule, its units back', () => {
    const outcome = { recipients: [accepted('a@example.com'), deferred('b@example.com')] }
    expect(settlementOf(outcome, queued(envelope, null, { failures: 1 }))).toEqual({
      recipients: outcome.recipients,
      settlement: {
        status: 'queued',
        error: 'Delivered to 1 of 2 recipients; b@example.com: 450 4.2.1 Mailbox busy',
        delayMs: MINUTE,
        counter: 'failures',
      },
      giveBack: false,
    })
  })

  it('gives up at the schedule’s last try, saying how many', () => {
    const outcome = { recipients: [deferred('a@example.com')] }
    expect(settlementOf(outcome, queued(['a@example.com'], null, { failures: 7 })).settlement).toEqual({
      status: 'failed',
      error: 'Gave up after 8 failed attempts: 450 4.2.1 Mailbox busy',
      counter: 'failures',
    })
  })

  it('gives up past the queue lifetime, saying how long it waited', () => {
    const outcome = { recipients: [deferred('a@example.com')] }
    const settled = settlementOf(outcome, queued(['a@example.com'], null, { ageMs: policy.maxAgeMs }))
    expect(settled.settlement).toEqual({
      status: 'failed',
      error: 'Still deferred after 72 hours: 450 4.2.1 Mailbox busy',
      counter: 'failures',
    })
  })

  it('push-back: queued again on its own schedule, and the connection’s queue held as long', () => {
    const outcome = { recipients: [deferred('a@example.com', '421 Slow down')], pushback: '421 Slow down' }
    expect(settlementOf(outcome, queued(['a@example.com'], null, { deferrals: 2 }))).toEqual({
      recipients: outcome.recipients,
      settlement: { status: 'queued', error: '421 Slow down', delayMs: 4 * MINUTE, counter: 'deferrals' },
      giveBack: true,
      holdQueueMs: 4 * MINUTE,
    })
  })

  it('push-back past the queue lifetime fails the message and holds nothing', () => {
    const outcome = { recipients: [deferred('a@example.com', '421 Slow down')], pushback: '421 Slow down' }
    const settled = settlementOf(outcome, queued(['a@example.com'], null, { ageMs: policy.maxAgeMs }))
    expect(settled.settlement.status).toBe('failed')
    expect(settled.holdQueueMs).toBeUndefined()
  })

  it('an outage this attempt found first counts a failure and has the server probed after its wait', () => {
    const outcome: Delivery = {
      recipients: [deferred('a@example.com', 'ECONNREFUSED')],
      unreachable: 'ECONNREFUSED',
      connectionFailure: 'counted',
    }
    expect(settlementOf(outcome, queued(['a@example.com']))).toEqual({
      recipients: outcome.recipients,
      settlement: { status: 'queued', error: 'ECONNREFUSED', delayMs: 30 * SECOND, counter: 'failures' },
      giveBack: true,
      probeInMs: 30 * SECOND,
    })
  })

  it('an outage already known spends no try: due again at once, behind the connection’s wait', () => {
    const outcome: Delivery = {
      recipients: [deferred('a@example.com', 'ECONNREFUSED')],
      unreachable: 'ECONNREFUSED',
      connectionFailure: 'known',
    }
    const settled = settlementOf(outcome, queued(['a@example.com'], null, { failures: 7 }))
    expect(settled.settlement).toEqual({
      status: 'queued',
      error: 'ECONNREFUSED',
      delayMs: 0,
      counter: undefined,
    })
    expect(settled.probeInMs).toBe(policy.failureDelayMs(8))
  })
})
