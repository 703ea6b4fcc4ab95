/**
 * An uploaded CSV file of addresses (an audience's members, a suppression list), read within
 * bounds: a header row naming the columns, one of them `email`, then a row a line.
 */
import { isUtf8 } from 'node:buffer'
import { Readable } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { CsvError, parse } from 'csv-parse'
import { AppError } from './app-error.ts'

/**
 * What every import takes, checked before anything is added: a line is one row of modest values,
 * so a longer one is a mistake (or not such a list), and its cells would be work and memory for
 * nothing.
 */
export const CSV_FILE_LIMITS = { lineBytes: 64 * 1024, columns: 200 } as const

/**
 * Rows read, checked and added together, at most: what an import does while it holds the event
 * loop before other requests get their turn, and the size of one insert.
 */
export const CSV_CHUNK = { rows: 250, bytes: 64 * 1024 } as const

/** What a kind of import says of its rows in its refusals. */
export interface CsvRowsBound {
  /** Rows after the header row, at most. */
  rows: number
  /** Rows, as the refusal names them: `members`. */
  nouns: string
  /** What a line holds, why 64 KiB is enough: `one member, whose values are at most 16 KiB`. */
  lineHolds: string
}

/** A row of the file, and the line it ends on. */
export interface CsvRow {
  record: string[]
  line: number
}

/** The header's column names, and where the address is. */
export interface CsvColumns {
  names: string[]
  emailColumn: number
}

/** Slices the parser is given, one at a time: it reads a slice in one go. */
const SLICE_BYTES = 16 * 1024

const thousands = (n: number) => n.toLocaleString('en-US')

export function csvRefusal(message: string): AppError {
  return new AppError('INVALID_CSV', message)
}

/**
 * The file's lines counted, and each measured, without reading it as CSV: a line break in a
 * quoted value only makes lines shorter and one more, so a file within the bounds is never
 * refused for its quoting. Stops at the first line past a bound.
 */
function checkLines(file: Buffer, bound: CsvRowsBound): void {
  let line = 0
  for (let start = 0; start < file.length; ) {
    const found = file.indexOf(10, start)
    const end = found < 0 ? file.length : found
    line++
    if (line > bound.rows + 1) {
      throw csvRefusal(
        `The file has more than ${thousands(bound.rows + 1)} lines: an import takes at most ` +
          `${thousands(bound.rows)} ${bound.nouns}, one a line after the header row. Split the file and import each part.`,
      )
    }
    if (end - start > CSV_FILE_LIMITS.lineBytes) {
      throw csvRefusal(
        line === 1
          ? `The header row is longer than 64 KiB: a file has at most ${CSV_FILE_LIMITS.columns} columns`
          : `Line ${line} is longer than 64 KiB: a line holds ${bound.lineHolds}`,
      )
    }
    start = end + 1
  }
}

/**
 * The file's rows, read a slice at a time; after each chunk of rows (CSV_CHUNK) the event loop
 * gets a turn, so that a large file never holds it for long.
 */
async function* rows(file: Buffer): AsyncGenerator<CsvRow[]> {
  const slices = function* () {
    for (let at = 0; at < file.length; at += SLICE_BYTES) yield file.subarray(at, at + SLICE_BYTES)
  }
  const source = Readable.from(slices())
  const parser = source.pipe(
    parse({ bom: true, info: true, relax_column_count: true, skip_empty_lines: true, trim: true }),
  )
  let chunk: CsvRow[] = []
  let chunkStart = 0
  try {
    // With `info`, each row comes with where it ends in the file (csv-parse's types do not say so).
    type Parsed = { record: string[]; info: { lines: number; bytes: number } }
    for await (const { record, info } of parser as AsyncIterable<Parsed>) {
      chunk.push({ record, line: info.lines })
      if (chunk.length >= CSV_CHUNK.rows || info.bytes - chunkStart >= CSV_CHUNK.bytes) {
        yield chunk
        chunk = []
        chunkStart = info.bytes
        await nextTurn()
      }
    }
  } catch (error) {
    if (error instanceof CsvError) throw csvRefusal(`The file is not CSV: ${error.message}`)
    throw error
  } finally {
    source.destroy()
    parser.destroy()
  }
  if (chunk.length) yield chunk
}

/** The header's column names; refuses a file without an `email` column or with too many. */
function header(record: string[]): CsvColumns {
  if (record.length > CSV_FILE_LIMITS.columns) {
    throw csvRefusal(
      `The file has ${thousands(record.length)} columns: at most ${CSV_FILE_LIMITS.columns}, one of them “email”`,
    )
  }
  const emailColumn = record.findIndex((name) => name.toLowerCase() === 'email')
  if (emailColumn < 0) throw csvRefusal('The first row must name the columns, one of them “email”')
  return { names: record, emailColumn }
}

/**
 * The rows after the header, a chunk at a time, each with the header's columns. The file is
 * refused whole (INVALID_CSV) before the first chunk when it is not UTF-8, is past its bounds,
 * or is not CSV anywhere: a first reading checks it without keeping its rows, the second yields
 * them a chunk at a time, for each to be added before the next is read.
 */
export async function* readCsvFile(
  file: Uint8Array,
  bound: CsvRowsBound,
): AsyncGenerator<{ columns: CsvColumns; rows: CsvRow[] }> {
  const bytes = Buffer.from(file.buffer, file.byteOffset, file.byteLength)
  if (!isUtf8(bytes)) {
    throw csvRefusal('The file is not UTF-8 text: save the CSV as UTF-8 and try again')
  }
  checkLines(bytes, bound)
  let columns: CsvColumns | undefined
  for await (const chunk of rows(bytes)) columns ??= header(chunk[0]?.record ?? [])
  if (!columns) throw csvRefusal('The first row must name the columns, one of them “email”')
  let first = true
  for await (const chunk of rows(bytes)) {
    yield { columns, rows: first ? chunk.slice(1) : chunk }
    first = false
  }
}

/**
 * Cells a spreadsheet would read as a formula (`=`, `+`, `-`, `@`, a tab or a carriage return
 * first) get an apostrophe before them, as OWASP advises: a list exported from Mailroom holds
 * servers' replies and reports' diagnostics, text a stranger wrote. `unquotedCell` takes it off
 * again when such a file is imported.
 */
const FORMULA_START = /^[=+\-@\t\r]/

/** One line of a CSV file (RFC 4180, CRLF), its cells safe to open in a spreadsheet. */
export function csvLine(cells: readonly (string | number | null)[]): string {
  return `${cells.map((cell) => csvCell(cell === null ? '' : String(cell))).join(',')}\r\n`
}

function csvCell(value: string): string {
  const safe = FORMULA_START.test(value) ? `'${value}` : value
  return /[",\r\n]/.test(safe) || safe !== safe.trim() ? `"${safe.replaceAll('"', '""')}"` : safe
}

/** A cell as `csvLine` wrote it, its apostrophe before a formula's first character taken off. */
export function unquotedCell(value: string): string {
  return value.startsWith("'") && FORMULA_START.test(value.slice(1)) ? value.slice(1) : value
}
