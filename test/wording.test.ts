import { describe, expect, it } from 'vitest'
import { counted } from '../src/wording.ts'

describe('counted', () => {
  it('words exactly one with the singular, any other count with the plural', () => {
    expect(counted(1, 'email')).toBe('1 email')
    expect(counted(0, 'email')).toBe('0 emails')
    expect(counted(2, 'minute')).toBe('2 minutes')
    expect(counted(1, 'API key')).toBe('1 API key')
    expect(counted(3, 'batch', 'batches')).toBe('3 batches')
  })
})
