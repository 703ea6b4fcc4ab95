/** The suppression list as a CSV file: exported a page at a time, imported a chunk at a time. */
import { setImmediate as nextTurn } from 'node:timers/promises'
import { SHOWN_PROBLEMS } from '../audiences/member-import.ts'
import { type LineProblem, shown } from '../audiences/member-lines.ts'
import { type CsvColumns, type CsvRow, csvLine, readCsvFile, unquotedCell } from '../csv-file.ts'
import type { Db } from '../db/sql.ts'
import { EmailAddressSchema } from '../generated/routes.ts'
import type { SuppressionScope } from './strength.ts'
import { listSuppressions, suppressManually } from './suppressions.ts'

export const SUPPRESSION_CSV_COLUMNS = [
  'email',
  'reason',
  'scope',
  'detail',
  'source_type',
  'source_id',
  'created_at',
] as const

/** Entries read from the database at a time: the largest page the API gives. */
const EXPORT_PAGE = 1000

/**
 * The account's whole list as CSV text, newest first: the header, then a piece per page of
 * entries, so that a list of any length is never held whole.
 */
export async function* suppressionCsv(db: Db, accountId: number): AsyncGenerator<string> {
  yield csvLine(SUPPRESSION_CSV_COLUMNS)
  let cursor: string | undefined
  do {
    const page = await listSuppressions(db, accountId, { limit: EXPORT_PAGE, cursor })
    yield page.suppressions
      .map((s) => csvLine([s.email, s.reason, s.scope, s.detail, s.source.type, s.source.id, s.created_at]))
      .join('')
    cursor = page.pagination.nextCursor ?? undefined
  } while (cursor !== undefined)
}

/** What one import takes at most, as a member import does. */
export const SUPPRESSION_CSV_ENTRIES = 100_000

const SUPPRESSION_ROWS = {
  rows: SUPPRESSION_CSV_ENTRIES,
  nouns: 'addresses',
  lineHolds: 'one address and its scope',
}

/** What an import did: entries added, addresses suppressed as strongly already, lines refused. */
export interface ImportedSuppressions {
  inserted: number
  existing: number
  /** The first SHOWN_PROBLEMS refused lines. */
  problems: LineProblem[]
  /** Refused lines past those. */
  moreProblems: number
}

/**
 * Adds a `manual` entry for each row of a CSV file whose header names an `email` column and,
 * optionally, a `scope` one (`all` when empty or absent), a chunk at a time, through the same
 * call as `POST /suppressions`. A row that is not an address or a scope is a refused line; a
 * file that is not such a list (INVALID_CSV) is refused before anything is added.
 */
export async function importSuppressionCsv(
  db: Db,
  accountId: number,
  file: Uint8Array,
): Promise<ImportedSuppressions> {
  const imported: ImportedSuppressions = { inserted: 0, existing: 0, problems: [], moreProblems: 0 }
  for await (const { columns, rows } of readCsvFile(file, SUPPRESSION_ROWS)) {
    const { byScope, problems } = entriesOf(rows, columns)
    for (const [scope, emails] of byScope) {
      if (emails.length === 0) continue
      const added = await suppressManually(db, accountId, { emails, scope }, 'dashboard')
      imported.inserted += added.inserted
      imported.existing += added.existing
    }
    const room = SHOWN_PROBLEMS - imported.problems.length
    imported.problems.push(...problems.slice(0, room))
    imported.moreProblems += Math.max(0, problems.length - room)
    await nextTurn()
  }
  return imported
}

/** A chunk's addresses by the scope asked for, and a problem per row that is not one. */
function entriesOf(rows: CsvRow[], columns: CsvColumns) {
  const scopeColumn = columns.names.findIndex((name) => name.toLowerCase() === 'scope')
  const byScope = new Map<SuppressionScope, string[]>([
    ['all', []],
    ['marketing', []],
  ])
  const problems: LineProblem[] = []
  for (const { record, line } of rows) {
    const email = unquotedCell(record[columns.emailColumn] ?? '')
    const scope = (scopeColumn < 0 ? '' : (record[scopeColumn] ?? '')) || 'all'
    const text = shown(record.join(','))
    const addresses = byScope.get(scope as SuppressionScope)
    if (!EmailAddressSchema.safeParse(email).success) {
      problems.push({ line, text, reason: `“${shown(email)}” is not an email address` })
    } else if (addresses === undefined) {
      problems.push({ line, text, reason: `the scope “${shown(scope)}” is not all or marketing` })
    } else {
      addresses.push(email)
    }
  }
  return { byScope, problems }
}
