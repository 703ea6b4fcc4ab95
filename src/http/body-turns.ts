/**
 * Large bodies, once received, are counted, parsed and walked one at a time per account, each
 * turn on a fresh pass of the event loop: one account's large bodies then hold the process for
 * one body's work at a time, with everyone else's requests in between. The event loop is one
 * thread, so this takes no throughput from anyone; and since a body is received before its
 * turn, a slow upload holds up no other.
 */
const turns = new Map<number, Promise<void>>()

/** Bodies of at least this many characters take turns. */
export const LARGE_BODY_CHARS = 256 * 1024

/** Waits for the account's turn; the function returned ends it. */
export async function takeTurn(accountId: number): Promise<() => void> {
  const before = turns.get(accountId) ?? Promise.resolve()
  let end = () => {}
  const turn = new Promise<void>((resolve) => {
    end = resolve
  })
  const queue = before.then(() => turn)
  turns.set(accountId, queue)
  await before
  await new Promise((resolve) => setImmediate(resolve))
  return () => {
    end()
    if (turns.get(accountId) === queue) turns.delete(accountId)
  }
}
