/** An audience's members imported from CSV lines: added in chunks, the refused lines reported. */
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { Sql } from '../db/sql.ts'
import { type AddedMembers, addMembers, getAudience } from './audiences.ts'
import type { LineProblem, ReadMembers } from './member-lines.ts'

/** Refused lines an import lists; past them, it says how many more there were. */
export const SHOWN_PROBLEMS = 100

/** What an import did: members added, addresses already there, and the lines refused. */
export interface Imported extends AddedMembers {
  /** The first SHOWN_PROBLEMS refused lines. */
  problems: LineProblem[]
  /** Refused lines past those. */
  moreProblems: number
}

/**
 * Adds members read from text or a file, one chunk at a time (each at most MAX_MEMBER_LINES, as
 * many as one API request takes), so that a large file is never held whole nor added in one statement. A
 * refusal of the file (INVALID_CSV) comes from its first chunk, before anything is added.
 */
export async function importMembers(
  sql: Sql,
  accountId: number,
  id: number,
  chunks: Iterable<ReadMembers> | AsyncIterable<ReadMembers>,
): Promise<Imported> {
  await getAudience(sql, accountId, id)
  const imported: Imported = { inserted: 0, duplicates: 0, problems: [], moreProblems: 0 }
  for await (const chunk of chunks) {
    const added = chunk.members.length ? await addMembers(sql, accountId, id, chunk.members) : undefined
    imported.inserted += added?.inserted ?? 0
    imported.duplicates += added?.duplicates ?? 0
    const room = SHOWN_PROBLEMS - imported.problems.length
    imported.problems.push(...chunk.problems.slice(0, room))
    imported.moreProblems += Math.max(0, chunk.problems.length - room)
    // A chunk of refused lines only adds nothing: the next is not read before others' turn.
    await nextTurn()
  }
  return imported
}
