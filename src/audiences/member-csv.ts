import { CSV_CHUNK, CSV_FILE_LIMITS, type CsvColumns, type CsvRow, readCsvFile } from '../csv-file.ts'
import type { MemberInput } from '../db/audiences.ts'
import { checked, keyedValues, type LineProblem, type ReadMembers, shown } from './member-lines.ts'

export { CSV_CHUNK }

/**
 * What one import takes, checked before a member is added. A line holds one member, whose values
 * are at most 16 KiB. A longer list than `members` is imported in parts, each a request of some
 * seconds rather than one of minutes.
 */
export const CSV_LIMITS = { members: 100_000, ...CSV_FILE_LIMITS } as const

const MEMBER_ROWS = {
  rows: CSV_LIMITS.members,
  nouns: 'members',
  lineHolds: 'one member, whose values are at most 16 KiB',
}

/** The members of one chunk of rows, and a problem per row that is not one. */
function membersOf(chunk: CsvRow[], columns: CsvColumns): ReadMembers {
  const members: MemberInput[] = []
  const problems: LineProblem[] = []
  for (const { record, line } of chunk) {
    const values = keyedValues()
    for (const [column, value] of record.entries()) {
      const key = columns.names[column]
      if (column !== columns.emailColumn && key && value !== '') values[key] = value
    }
    const member = checked(record[columns.emailColumn] ?? '', Object.keys(values).length ? values : null)
    if (typeof member === 'string') problems.push({ line, text: shown(record.join(',')), reason: member })
    else members.push(member)
  }
  return { members, problems }
}

/**
 * Members from a CSV file whose header row names the keys: the column named `email` (any case)
 * holds the address, every other named column becomes a payload key with the row's value
 * (empty cells left out). A row with no other value gets no payload (null). The file is refused
 * whole (INVALID_CSV) before the first chunk, as `readCsvFile` says.
 */
export async function* readMemberCsv(file: Uint8Array): AsyncGenerator<ReadMembers> {
  for await (const { columns, rows } of readCsvFile(file, MEMBER_ROWS)) yield membersOf(rows, columns)
}
