import { describe, expect, it } from 'vitest'
import { suppressionStrength } from '../../src/suppressions/strength.ts'

const strength = suppressionStrength

describe('suppressionStrength', () => {
  it('orders the reasons: complaint over hard_bounce over manual over unsubscribe', () => {
    expect(strength({ reason: 'complaint', scope: 'all' })).toBeGreaterThan(
      strength({ reason: 'hard_bounce', scope: 'all' }),
    )
    expect(strength({ reason: 'hard_bounce', scope: 'all' })).toBeGreaterThan(
      strength({ reason: 'manual', scope: 'all' }),
    )
    expect(strength({ reason: 'manual', scope: 'marketing' })).toBeGreaterThan(
      strength({ reason: 'unsubscribe', scope: 'marketing' }),
    )
  })

  it('puts any stronger reason above a weaker one whatever the scopes', () => {
    expect(strength({ reason: 'manual', scope: 'marketing' })).toBeGreaterThan(
      strength({ reason: 'unsubscribe', scope: 'all' }),
    )
    expect(strength({ reason: 'hard_bounce', scope: 'marketing' })).toBeGreaterThan(
      strength({ reason: 'manual', scope: 'all' }),
    )
  })

  it('within one reason, scope all outranks marketing and equal entries are equal', () => {
    expect(strength({ reason: 'manual', scope: 'all' })).toBeGreaterThan(
      strength({ reason: 'manual', scope: 'marketing' }),
    )
    expect(strength({ reason: 'manual', scope: 'all' })).toBe(strength({ reason: 'manual', scope: 'all' }))
  })
})
