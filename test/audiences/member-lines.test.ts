import { describe, expect, it } from 'vitest'
import { readMemberCsv } from '../../src/audiences/member-csv.ts'
import {
  MAX_MEMBER_LINES,
  MAX_TYPED_LINES,
  readMemberLines,
  TYPED_CHUNK_LINES,
} from '../../src/audiences/member-lines.ts'

// docs/dashboard.md: members typed as lines or uploaded as CSV, checked as the API checks them.

describe('a value named __proto__ (a parsed payload would lose it)', () => {
  it('is a problem of its line, typed or uploaded; other lines are taken', async () => {
    const [typed] = readMemberLines('ann@example.com, name=Ann\nbob@example.com, __proto__=x, name=Bob')
    expect(typed?.members).toEqual([{ email: 'ann@example.com', payload: { name: 'Ann' } }])
    expect(typed?.problems).toEqual([
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
    const [typed] = readMemberLines('ann@example.com, constructor=c, toString=t, hasOwnProperty=h')
    expect(typed?.problems).toEqual([])
    expect(typed?.members).toEqual([
      { email: 'ann@example.com', payload: { constructor: 'c', toString: 't', hasOwnProperty: 'h' } },
    ])
  })
})

describe('typed lines, many of them', () => {
  it(`are read and checked ${TYPED_CHUNK_LINES} lines at a time, blank lines not counted in a chunk`, () => {
    const text = Array.from({ length: 600 }, (_, i) => `m${i}@example.com${i % 2 ? '\n' : ''}`).join('\n')
    const chunks = [...readMemberLines(text)]
    expect(chunks.map((c) => c.members.length)).toEqual([TYPED_CHUNK_LINES, TYPED_CHUNK_LINES, 100])
    expect(chunks[1]?.members[0]).toEqual({ email: 'm250@example.com' })
  })

  it(`stop at ${MAX_MEMBER_LINES} members, and at ${MAX_TYPED_LINES} lines blank ones included, saying so`, () => {
    const flood = '\n'.repeat(10 * 1024 * 1024 - 64)
    expect([...readMemberLines(flood)]).toEqual([])
    const past = [...readMemberLines(`${flood}ann@example.com`)]
    expect(past.flatMap((c) => c.members)).toEqual([])
    expect(past.flatMap((c) => c.problems)).toEqual([
      { line: MAX_TYPED_LINES + 1, text: '', reason: `at most ${MAX_TYPED_LINES} lines at a time` },
    ])
    const many = [
      ...readMemberLines(
        Array.from({ length: MAX_MEMBER_LINES + 5 }, (_, i) => `m${i}@example.com`).join('\n'),
      ),
    ]
    expect(many.flatMap((c) => c.members)).toHaveLength(MAX_MEMBER_LINES)
    expect(many.flatMap((c) => c.problems)).toEqual([
      { line: MAX_MEMBER_LINES + 1, text: '', reason: `at most ${MAX_MEMBER_LINES} members at a time` },
    ])
  })
})
