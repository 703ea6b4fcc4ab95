/** Largest value of PostgreSQL's `integer`, the type of every id Mailroom hands out (and of its counts). */
export const MAX_INTEGER = 2_147_483_647

/** Whether `id` could name a row at all; a larger number names none (and must not reach SQL). */
export function isStorableId(id: number): boolean {
  return Number.isSafeInteger(id) && id >= 1 && id <= MAX_INTEGER
}

/**
 * A listing page's cursor: the ID of its last row, kept opaque (base64url) so that what it holds can
 * change without breaking a client that passes it on as given.
 */
export function cursorOf(id: number): string {
  return Buffer.from(String(id)).toString('base64url')
}

/** The ID a cursor holds; null for anything cursorOf did not make. */
export function idOfCursor(cursor: string): number | null {
  const text = Buffer.from(cursor, 'base64url').toString()
  if (!/^[1-9][0-9]{0,9}$/.test(text)) return null
  const id = Number(text)
  return isStorableId(id) && cursorOf(id) === cursor ? id : null
}
