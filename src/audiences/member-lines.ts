import type { MemberInput, Payload } from '../db/audiences.ts'
import { unstorableTextIssues } from '../db/storable-text.ts'
import { AudienceMemberInputSchema } from '../generated/routes.ts'

/** A line that could not be taken, and why. */
export interface LineProblem {
  line: number
  /** The line as it was given (cut when long). */
  text: string
  reason: string
}

/** Members read from text or a file: those that are fine, and a problem per line that is not. */
export interface ReadMembers {
  members: MemberInput[]
  problems: LineProblem[]
}

/** As many as one request of the API takes (`POST /audiences/{id}/members`). */
export const MAX_MEMBER_LINES = 10_000
const SHOWN_LINE = 200

export function shown(text: string): string {
  return text.length > SHOWN_LINE ? `${text.slice(0, SHOWN_LINE)}…` : text
}

/** The member as the API would take it, or why not. */
export function checked(email: string, payload: Payload): MemberInput | string {
  // The API refuses the key too: zod leaves it out of a payload it parses, which would lose it.
  if (payload && Object.hasOwn(payload, '__proto__')) return 'a value cannot be named __proto__'
  const member = payload === null ? { email } : { email, payload }
  const result = AudienceMemberInputSchema.safeParse(member)
  if (!result.success) {
    // The schema bounds the payload too (16 KiB as JSON text).
    const tooLong = result.error.issues.some((issue) => issue.path[0] === 'payload')
    return tooLong
      ? 'its values are longer than 16 KiB together'
      : `“${shown(email)}” is not an email address`
  }
  if (unstorableTextIssues(member).length) return 'it contains the NUL character or a broken character'
  return member
}

/** Values by key, without a prototype: a key `__proto__` is kept as one, for `checked` to refuse. */
export function keyedValues(): Record<string, string> {
  return Object.create(null)
}

/**
 * Comma-separated parts as values: `key=value`, or a bare value stored as `attr_1`, `attr_2`,
 * ... in order. Spaces around parts, keys and values are trimmed; empty parts are skipped.
 * Null when there is no value at all.
 */
function valuesOf(parts: string[]): Record<string, string> | null {
  const values = keyedValues()
  let bare = 0
  for (const raw of parts) {
    const part = raw.trim()
    if (part === '') continue
    const equals = part.indexOf('=')
    const key = equals > 0 ? part.slice(0, equals).trim() : ''
    if (key) values[key] = part.slice(equals + 1).trim()
    else values[`attr_${++bare}`] = part
  }
  return Object.keys(values).length ? values : null
}

/** Sample values for a template's preview, written as a member's: `name=Ann, VIP` (lines count as commas). */
export function readValues(text: string): Record<string, string> | null {
  return valuesOf(text.split(/[,\r\n]/))
}

/** Lines read from typed text at most, blank ones included: past them, nothing more is read. */
export const MAX_TYPED_LINES = 2 * MAX_MEMBER_LINES

/** Typed lines checked and added together at most (checking one takes 40 to 100 µs). */
export const TYPED_CHUNK_LINES = 250

/**
 * Members typed one per line, as the dashboard specifies: an address, then comma-separated
 * `key=value` pairs, where a value without a key is stored as `attr_1`, `attr_2`, ... in order
 * (`ann@example.com, name=Ann, VIP` gives `{"name": "Ann", "attr_1": "VIP"}`). Blank lines are
 * skipped; a line with no pairs gets no payload (null). Spaces around parts are trimmed.
 *
 * Read a line at a time (a text of millions of line breaks is never split whole) and yielded
 * TYPED_CHUNK_LINES lines at a time, each chunk checked only when asked for. At most
 * MAX_MEMBER_LINES members in MAX_TYPED_LINES lines; text past either is a problem saying so.
 */
export function* readMemberLines(text: string): Generator<ReadMembers> {
  let chunk: ReadMembers = { members: [], problems: [] }
  let taken = 0
  const breaks = /\r\n|\r|\n/g
  for (let number = 1, start = 0; start <= text.length; number++) {
    const found = breaks.exec(text)
    const line = text.slice(start, found ? found.index : text.length)
    if (number > MAX_TYPED_LINES) {
      if (text.slice(start).trim() !== '') {
        chunk.problems.push({ line: number, text: '', reason: `at most ${MAX_TYPED_LINES} lines at a time` })
      }
      break
    }
    start = found ? breaks.lastIndex : text.length + 1
    if (line.trim() === '') continue
    if (taken++ >= MAX_MEMBER_LINES) {
      chunk.problems.push({ line: number, text: '', reason: `at most ${MAX_MEMBER_LINES} members at a time` })
      break
    }
    const [address = '', ...parts] = line.split(',')
    const member = checked(address.trim(), valuesOf(parts))
    if (typeof member === 'string') chunk.problems.push({ line: number, text: shown(line), reason: member })
    else chunk.members.push(member)
    if (chunk.members.length + chunk.problems.length >= TYPED_CHUNK_LINES) {
      yield chunk
      chunk = { members: [], problems: [] }
    }
  }
  if (chunk.members.length + chunk.problems.length) yield chunk
}
