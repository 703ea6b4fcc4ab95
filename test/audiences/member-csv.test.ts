/**
 * A CSV import is bounded before a member is added (lines, a line's length, columns) and read in
 * chunks of bounded size, the event loop getting a turn between them, so that a large file never
 * holds it for long nor is held whole.
 */
import { describe, expect, it } from 'vitest'
import { CSV_CHUNK, CSV_LIMITS, readMemberCsv } from '../../src/audiences/member-csv.ts'
import type { ReadMembers } from '../../src/audiences/member-lines.ts'
import { countTurns } from '../support/event-loop-turns.ts'

const encode = (text: string) => new TextEncoder().encode(text)

function memberLines(count: number, extra = ''): string {
  return Array.from({ length: count }, (_, i) => `m${i}@example.com${extra}`).join('\n')
}

async function chunksOf(file: Uint8Array): Promise<ReadMembers[]> {
  const chunks: ReadMembers[] = []
  for await (const chunk of readMemberCsv(file)) chunks.push(chunk)
  return chunks
}

/** The refusal of the file, which comes before its first chunk. */
async function refusalOf(file: Uint8Array) {
  return readMemberCsv(file)
    .next()
    .then(
      () => undefined,
      (error) => error,
    )
}

describe('the bounds of an import, both sides of each', () => {
  it(`takes ${CSV_LIMITS.members} members after the header, and refuses one line more naming the bound`, async () => {
    const at = await chunksOf(encode(`email\n${memberLines(CSV_LIMITS.members)}\n`))
    expect(at.reduce((sum, chunk) => sum + chunk.members.length, 0)).toBe(CSV_LIMITS.members)
    const past = await refusalOf(encode(`email\n${memberLines(CSV_LIMITS.members + 1)}`))
    expect(past).toMatchObject({
      code: 'INVALID_CSV',
      message:
        'The file has more than 100,001 lines: an import takes at most 100,000 members, one a line ' +
        'after the header row. Split the file and import each part.',
    })
  }, 60_000)

  it(`takes ${CSV_LIMITS.columns} columns and refuses ${CSV_LIMITS.columns + 1}`, async () => {
    const names = (n: number) => ['email', ...Array.from({ length: n - 1 }, (_, i) => `c${i}`)].join(',')
    const at = await chunksOf(encode(`${names(CSV_LIMITS.columns)}\nann@example.com,x\n`))
    expect(at[0]?.members).toEqual([{ email: 'ann@example.com', payload: { c0: 'x' } }])
    expect(await refusalOf(encode(`${names(CSV_LIMITS.columns + 1)}\nann@example.com,x\n`))).toMatchObject({
      code: 'INVALID_CSV',
      message: 'The file has 201 columns: at most 200, one of them “email”',
    })
  })

  it('refuses a header row of a million columns by its length, before reading it as CSV', async () => {
    const header = `email,${Array.from({ length: 1_000_000 }, () => '').join(',')}`
    expect(await refusalOf(encode(`${header}\nann@example.com\n`))).toMatchObject({
      code: 'INVALID_CSV',
      message: 'The header row is longer than 64 KiB: a file has at most 200 columns',
    })
  })

  it('takes a line of 64 KiB and refuses a longer one, naming it', async () => {
    const line = (bytes: number) => `ann@example.com,${'x'.repeat(bytes - 'ann@example.com,'.length)}`
    const at = await chunksOf(encode(`email,note\n${line(CSV_LIMITS.lineBytes)}\n`))
    // Taken as a line, refused as a member: its value is past a member's 16 KiB.
    expect(at[0]?.problems[0]?.reason).toBe('its values are longer than 16 KiB together')
    expect(
      await refusalOf(encode(`email,note\nbob@example.com\n${line(CSV_LIMITS.lineBytes + 1)}\n`)),
    ).toMatchObject({
      code: 'INVALID_CSV',
      message: 'Line 3 is longer than 64 KiB: a line holds one member, whose values are at most 16 KiB',
    })
  })

  it('refuses a file that stops being CSV near its end before the first chunk, so nothing is added', async () => {
    const refusal = await refusalOf(encode(`email\n${memberLines(5000)}\n"unclosed@example.com\n`))
    expect(refusal).toMatchObject({ code: 'INVALID_CSV' })
    expect(refusal.message).toMatch(/^The file is not CSV: /)
  })
})

describe('a large import', () => {
  it('comes in chunks of bounded rows and bytes, with a turn of the event loop between them', async () => {
    const turns = countTurns()
    const seen: { rows: number; turns: number }[] = []
    const rows = 2 * CSV_CHUNK.rows + 500
    for await (const chunk of readMemberCsv(encode(`email,name\n${memberLines(rows, ',Ann')}`))) {
      seen.push({ rows: chunk.members.length + chunk.problems.length, turns: turns.count })
    }
    turns.stop()
    expect(seen.reduce((sum, chunk) => sum + chunk.rows, 0)).toBe(rows)
    expect(seen.length).toBeGreaterThanOrEqual(3)
    for (const chunk of seen) expect(chunk.rows).toBeLessThanOrEqual(CSV_CHUNK.rows)
    for (const [i, chunk] of seen.entries())
      if (i > 0) expect(chunk.turns).toBeGreaterThan(seen[i - 1]?.turns ?? 0)
    // Long rows close a chunk by its bytes before its count of rows.
    const long = await chunksOf(encode(`email,note\n${memberLines(200, `,${'y'.repeat(10_000)}`)}`))
    expect(long.length).toBeGreaterThanOrEqual(200 / Math.ceil(CSV_CHUNK.bytes / 10_000))
  })
})
