import { describe, expect, it } from 'vitest'
import { counted, elapsed } from '../src/wording.ts'

describe('counted', () => {
  it('words exactly one with the singular, any other count with the plural', () => {
    expect(counted(1, 'email')).toBe('1 email')
    expect(counted(0, 'email')).toBe('0 emails')
    expect(counted(2, 'minute')).toBe('2 minutes')
    expect(counted(1, 'API key')).toBe('1 API key')
    expect(counted(3, 'batch', 'batches')).toBe('3 batches')
  })
})

describe('elapsed', () => {
  it('says whole hours from one hour on, in the singular for one, and seconds below an hour', () => {
    expect(elapsed(3_600_000)).toBe('1 hour')
    expect(elapsed(72 * 3_600_000)).toBe('72 hours')
    expect(elapsed(3_599_000)).toBe('3599 seconds')
    expect(elapsed(1_000)).toBe('1 second')
    expect(elapsed(1_500)).toBe('2 seconds')
  })
})
