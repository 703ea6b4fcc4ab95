import { describe, expect, it } from 'vitest'
import { readMemberCsv } from '../../src/audiences/member-csv.ts'
import { readMemberLines } from '../../src/audiences/member-lines.ts'

// dashboard.md, "Audiences": members typed as lines or uploaded as CSV, checked as the API checks them.

describe('a value named __proto__ (a parsed payload would lose it)', () => {
  it('is a problem of its line, typed or uploaded; other lines are taken', async () => {
    const typed = readMemberLines('ann@example.com, name=Ann\nbob@example.com, __proto__=x, name=Bob')
    expect(typed.members).toEqual([{ email: 'ann@example.com', payload: { name: 'Ann' } }])
    expect(typed.problems).toEqual([
      {
        line: 2,
        text: 'bob@example.com, __proto__=x, name=Bob',
        reason: 'a value cannot be named __proto__',
      },
    ])
    const chunks = []
    const file = new TextEncoder().encode('email,__proto__\r\nann@example.com,\r\nbob@example.com,x\r\n')
    for await (const chunk of readMemberCsv(file)) chunks.push(chunk)
    const [uploaded, ...more] = chunks
    expect(more).toEqual([])
    expect(uploaded?.members).toEqual([{ email: 'ann@example.com' }])
    expect(uploaded?.problems).toEqual([
      { line: 3, text: 'bob@example.com,x', reason: 'a value cannot be named __proto__' },
    ])
  })

  it('leaves keys that name Object.prototype’s other members as values', () => {
    const typed = readMemberLines('ann@example.com, constructor=c, toString=t, hasOwnProperty=h')
    expect(typed.problems).toEqual([])
    expect(typed.members).toEqual([
      { email: 'ann@example.com', payload: { constructor: 'c', toString: 't', hasOwnProperty: 'h' } },
    ])
  })
})
