import { isUtf8 } from 'node:buffer'
import { Readable } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { CsvError, parse } from 'csv-parse'
import { AppError } from '../app-error.ts'
import type { MemberInput } from '../db/audiences.ts'
import { checked, keyedValues, type LineProblem, type ReadMembers, shown } from './member-lines.ts'

/**
 * What one import takes, checked before a member is added. A line holds one member, whose values
 * are at most 16 KiB: a longer line is a mistake (or not a member list), and its cells would be
 * work and memory for nothing. A longer list than `members` is imported in parts, each a request
 * of some seconds rather than one of minutes.
 */
export const CSV_LIMITS = { members: 100_000, lineBytes: 64 * 1024, columns: 200 } as const

/**
 * Rows read, checked and added together, at most: what the import does while it holds the event
 * loop before other requests get their turn (checking a row as the API does takes some 40 to 100
 * µs on a loaded machine), and the size of one insert.
 */
export const CSV_CHUNK = { rows: 250, bytes: 64 * 1024 } as const

/** Slices the parser is given, one at a time: it reads a slice in one go. */
const SLICE_BYTES = 16 * 1024

interface Row {
  record: string[]
  /** Where the row ends in the file. */
  info: { lines: number; bytes: number }
}

const thousands = (n: number) => n.toLocaleString('en-US')

function refusal(message: string): AppError {
  return new AppError('INVALID_CSV', message)
}

/**
 * The file's lines counted, and each measured, without reading it as CSV: a line break in a
 * quoted value only makes lines shorter and one more, so a file within the bounds is never
 * refused for its quoting. Stops at the first line past a bound.
 */
function checkLines(file: Buffer): void {
  let line = 0
  for (let start = 0; start < file.length; ) {
    const found = file.indexOf(10, start)
    const end = found < 0 ? file.length : found
    line++
    if (line > CSV_LIMITS.members + 1) {
      throw refusal(
        `The file has more than ${thousands(CSV_LIMITS.members + 1)} lines: an import takes at most ` +
          `${thousands(CSV_LIMITS.members)} members, one a line after the header row. Split the file and import each part.`,
      )
    }
    if (end - start > CSV_LIMITS.lineBytes) {
      throw refusal(
        line === 1
          ? `The header row is longer than 64 KiB: a file has at most ${CSV_LIMITS.columns} columns`
          : `Line ${line} is longer than 64 KiB: a line holds one member, whose values are at most 16 KiB`,
      )
    }
    start = end + 1
  }
}

/**
 * The file's rows, read a slice at a time; after each chunk of rows (CSV_CHUNK) the event loop
 * gets a turn, so that a large file never holds it for long.
 */
async function* rows(file: Buffer): AsyncGenerator<Row[]> {
  const slices = function* () {
    for (let at = 0; at < file.length; at += SLICE_BYTES) yield file.subarray(at, at + SLICE_BYTES)
  }
  const source = Readable.from(slices())
  const parser = source.pipe(
    parse({ bom: true, info: true, relax_column_count: true, skip_empty_lines: true, trim: true }),
  )
  let chunk: Row[] = []
  let chunkStart = 0
  try {
    // With `info`, each row comes with where it ends in the file (csv-parse's types do not say so).
    for await (const row of parser as AsyncIterable<Row>) {
      chunk.push(row)
      if (chunk.length >= CSV_CHUNK.rows || row.info.bytes - chunkStart >= CSV_CHUNK.bytes) {
        yield chunk
        chunk = []
        chunkStart = row.info.bytes
        await nextTurn()
      }
    }
  } catch (error) {
    if (error instanceof CsvError) throw refusal(`The file is not CSV: ${error.message}`)
    throw error
  } finally {
    source.destroy()
    parser.destroy()
  }
  if (chunk.length) yield chunk
}

/** The header's column names; refuses a file without an `email` column or with too many. */
function header(record: string[]): { names: string[]; emailColumn: number } {
  if (record.length > CSV_LIMITS.columns) {
    throw refusal(
      `The file has ${thousands(record.length)} columns: at most ${CSV_LIMITS.columns}, one of them “email”`,
    )
  }
  const emailColumn = record.findIndex((name) => name.toLowerCase() === 'email')
  if (emailColumn < 0) throw refusal('The first row must name the columns, one of them “email”')
  return { names: record, emailColumn }
}

/** The members of one chunk of rows, and a problem per row that is not one. */
function membersOf(chunk: Row[], columns: ReturnType<typeof header>): ReadMembers {
  const members: MemberInput[] = []
  const problems: LineProblem[] = []
  for (const { record, info } of chunk) {
    const values = keyedValues()
    for (const [column, value] of record.entries()) {
      const key = columns.names[column]
      if (column !== columns.emailColumn && key && value !== '') values[key] = value
    }
    const member = checked(record[columns.emailColumn] ?? '', Object.keys(values).length ? values : null)
    if (typeof member === 'string')
      problems.push({ line: info.lines, text: shown(record.join(',')), reason: member })
    else members.push(member)
  }
  return { members, problems }
}

/**
 * Members from a CSV file whose header row names the keys: the column named `email` (any case)
 * holds the address, every other named column becomes a payload key with the row's value
 * (empty cells left out). A row with no other value gets no payload (null).
 *
 * The file is refused whole (INVALID_CSV) before the first chunk when it is not UTF-8, is past
 * CSV_LIMITS, or is not CSV anywhere: a first reading checks it without keeping its rows, the
 * second yields its members a chunk at a time, for each to be added before the next is read.
 */
export async function* readMemberCsv(file: Uint8Array): AsyncGenerator<ReadMembers> {
  const bytes = Buffer.from(file.buffer, file.byteOffset, file.byteLength)
  if (!isUtf8(bytes)) {
    throw refusal('The file is not UTF-8 text: save the CSV as UTF-8 and try again')
  }
  checkLines(bytes)
  let columns: ReturnType<typeof header> | undefined
  for await (const chunk of rows(bytes)) columns ??= header(chunk[0]?.record ?? [])
  if (!columns) throw refusal('The first row must name the columns, one of them “email”')
  let first = true
  for await (const chunk of rows(bytes)) {
    yield membersOf(first ? chunk.slice(1) : chunk, columns)
    first = false
  }
}
