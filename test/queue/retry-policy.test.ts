import { describe, expect, it } from 'vitest'
import { defaultRetryPolicy, nextTry, retryDelayMs, retryPolicy } from '../../src/queue/retry-policy.ts'

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const policy = defaultRetryPolicy(72)
const fresh = { failures: 0, deferrals: 0, ageMs: 0 }

describe('the default retry schedule', () => {
  it('waits 30 s after the first failure, doubling to an hour at most', () => {
    const waits = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => policy.failureDelayMs(n))
    expect(waits).toEqual([30, 60, 120, 240, 480, 960, 1920, 3600, 3600].map((s) => s * SECOND))
  })

  it('backs off a minute after the first push-back, doubling to 15 minutes at most', () => {
    const waits = [1, 2, 3, 4, 5, 6].map((n) => policy.pushbackDelayMs(n))
    expect(waits).toEqual([1, 2, 4, 8, 15, 15].map((m) => m * MINUTE))
  })

  it('stays at its ceiling however many tries came before', () => {
    expect(policy.failureDelayMs(10_000)).toBe(HOUR)
    expect(policy.pushbackDelayMs(10_000)).toBe(15 * MINUTE)
  })

  it('keeps mail for the queue lifetime it is given', () => {
    expect(defaultRetryPolicy(72).maxAgeMs).toBe(72 * HOUR)
    expect(defaultRetryPolicy(1).maxAgeMs).toBe(HOUR)
  })

  it('shortened for tests, keeps its shape: 120 times the first failure wait, 15 times the first push-back', () => {
    const short = retryPolicy(10, 3, 20)
    expect([1, 7, 8, 50].map((n) => short.failureDelayMs(n))).toEqual([10, 640, 1200, 1200])
    expect([1, 4, 5].map((n) => short.pushbackDelayMs(n))).toEqual([20, 160, 300])
    expect(short.maxAgeMs).toBe(72 * HOUR)
  })
})

describe('the wait after an attempt', () => {
  it('counts failures and push-backs apart', () => {
    const state = { failures: 2, deferrals: 0, ageMs: 0 }
    expect(retryDelayMs(policy, state, 'failure')).toBe(2 * MINUTE)
    expect(retryDelayMs(policy, state, 'pushback')).toBe(MINUTE)
  })

  it('is none after an outage already known: the connection waits for its server instead', () => {
    expect(retryDelayMs(policy, { failures: 5, deferrals: 5, ageMs: 0 }, 'known-outage')).toBe(0)
  })
})

describe('nextTry', () => {
  it('retries a failure on the failure schedule, counting it', () => {
    expect(nextTry(policy, fresh, 'failure')).toEqual({
      retry: true,
      delayMs: 30 * SECOND,
      counter: 'failures',
    })
  })

  it('retries the seventh failure and gives up at the eighth, the schedule’s last step', () => {
    expect(nextTry(policy, { ...fresh, failures: 6 }, 'failure')).toEqual({
      retry: true,
      delayMs: 1920 * SECOND,
      counter: 'failures',
    })
    expect(nextTry(policy, { ...fresh, failures: 7 }, 'failure')).toEqual({
      retry: false,
      gaveUp: 'failures',
      failures: 8,
      counter: 'failures',
    })
  })

  it('gives up at the policy’s number of tries, whatever it is', () => {
    const one = retryPolicy(10, 1, 20)
    expect(nextTry(one, fresh, 'failure')).toMatchObject({ retry: false, gaveUp: 'failures', failures: 1 })
  })

  it('never runs out of push-backs by their number, counting each as a deferral', () => {
    expect(nextTry(policy, { failures: 7, deferrals: 500, ageMs: 0 }, 'pushback')).toEqual({
      retry: true,
      delayMs: 15 * MINUTE,
      counter: 'deferrals',
    })
  })

  it('spends no try on an outage already known and retries it at once', () => {
    expect(nextTry(policy, { ...fresh, failures: 7 }, 'known-outage')).toEqual({
      retry: true,
      delayMs: 0,
      counter: undefined,
    })
  })

  it('retries when the next attempt falls exactly at the end of the queue lifetime', () => {
    const ageMs = policy.maxAgeMs - MINUTE
    expect(nextTry(policy, { ...fresh, ageMs }, 'pushback')).toEqual({
      retry: true,
      delayMs: MINUTE,
      counter: 'deferrals',
    })
  })

  it('gives up when the next attempt would fall past the queue lifetime, a millisecond being enough', () => {
    const ageMs = policy.maxAgeMs - MINUTE + 1
    expect(nextTry(policy, { ...fresh, ageMs }, 'pushback')).toEqual({
      retry: false,
      gaveUp: 'lifetime',
      counter: 'deferrals',
    })
    expect(nextTry(policy, { ...fresh, ageMs: policy.maxAgeMs }, 'failure')).toEqual({
      retry: false,
      gaveUp: 'lifetime',
      counter: 'failures',
    })
  })

  it('ends a known outage past the queue lifetime too, without counting it', () => {
    expect(nextTry(policy, { ...fresh, ageMs: policy.maxAgeMs }, 'known-outage')).toEqual({
      retry: true,
      delayMs: 0,
      counter: undefined,
    })
    expect(nextTry(policy, { ...fresh, ageMs: policy.maxAgeMs + 1 }, 'known-outage')).toEqual({
      retry: false,
      gaveUp: 'lifetime',
      counter: undefined,
    })
  })

  it('gives up on the number of failures before the lifetime when both are reached', () => {
    expect(nextTry(policy, { ...fresh, failures: 7, ageMs: policy.maxAgeMs }, 'failure')).toMatchObject({
      gaveUp: 'failures',
    })
  })
})
