/** Largest value of PostgreSQL's `integer`, the type of every id Mailroom hands out (and of its counts). */
export const MAX_INTEGER = 2_147_483_647

/** Whether `id` could name a row at all; a larger number names none (and must not reach SQL). */
export function isStorableId(id: number): boolean {
  return Number.isSafeInteger(id) && id >= 1 && id <= MAX_INTEGER
}
