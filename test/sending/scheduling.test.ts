/**
 * What a scheduled_at may be, and what can still be canceled or moved: pure decisions, without a
 * database (src/sending/scheduling.ts).
 */
import { describe, expect, it } from 'vitest'
import { AppError } from '../../src/app-error.ts'
import {
  isBatchCancelable,
  isCancelable,
  MAX_SCHEDULE_AHEAD_MS,
  refuseScheduleOnSend,
  scheduledTime,
} from '../../src/sending/scheduling.ts'

const NOW = Date.parse('2026-03-01T12:00:00.000Z')

function refusal(run: () => unknown): unknown {
  try {
    run()
  } catch (error) {
    expect(error).toBeInstanceOf(AppError)
    return (error as AppError).issues
  }
  throw new Error('not refused')
}

describe('scheduledTime', () => {
  it('takes now, and up to 30 days ahead, whatever the offset', () => {
    expect(scheduledTime(undefined, NOW)).toBeUndefined()
    expect(scheduledTime('2026-03-01T12:00:00Z', NOW)?.getTime()).toBe(NOW)
    expect(scheduledTime('2026-03-31T14:00:00+02:00', NOW)?.getTime()).toBe(NOW + MAX_SCHEDULE_AHEAD_MS)
  })

  it('refuses the millisecond before now and the one after 30 days, at ["scheduled_at"]', () => {
    expect(refusal(() => scheduledTime('2026-03-01T11:59:59.999Z', NOW))).toEqual([
      expect.objectContaining({ path: ['scheduled_at'], code: 'too_small' }),
    ])
    expect(refusal(() => scheduledTime('2026-03-31T12:00:00.001Z', NOW))).toEqual([
      expect.objectContaining({ path: ['scheduled_at'], code: 'too_big' }),
    ])
  })

  it('is refused on a send that goes now', () => {
    expect(() => refuseScheduleOnSend({})).not.toThrow()
    expect(refusal(() => refuseScheduleOnSend({ scheduled_at: '2026-03-02T00:00:00Z' }))).toEqual([
      expect.objectContaining({ path: ['scheduled_at'], code: 'custom' }),
    ])
  })
})

describe('isCancelable and isBatchCancelable', () => {
  it('cancels a scheduled or queued email only before its first attempt', () => {
    expect(isCancelable({ status: 'scheduled', attempts: 0 })).toBe(true)
    expect(isCancelable({ status: 'queued', attempts: 0 })).toBe(true)
    expect(isCancelable({ status: 'queued', attempts: 1 })).toBe(false)
    for (const status of ['sending', 'sent', 'failed', 'canceled']) {
      expect(isCancelable({ status, attempts: 0 }), status).toBe(false)
    }
  })

  it('cancels a pending or running batch only', () => {
    expect(['pending', 'running', 'completed', 'failed', 'canceled'].filter(isBatchCancelable)).toEqual([
      'pending',
      'running',
    ])
  })
})
