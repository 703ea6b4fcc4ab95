import type { ImapFlow } from 'imapflow'

/** Where reading a folder got to: its UIDVALIDITY and the last UID read under it. */
export interface MailboxCursor {
  uidValidity: string | null
  lastUid: number
}

/** A message of the folder, its source cut at `maxBytes` (see ReadLimits). */
export interface FolderMessage {
  uid: number
  source: Buffer
}

/** What became of a message read: handled (marked seen, and moved when asked), or left as it was. */
export type MessageFate = 'handled' | 'left'

export interface ReadLimits {
  /** Messages read at a time, oldest first; the rest wait for the next reading. */
  messages: number
  /** Bytes of each message fetched: a report's parts come before the message it returns. */
  maxBytes: number
}

export interface FolderReading {
  cursor: MailboxCursor
  /** The folder's UIDVALIDITY changed: its UIDs were renumbered and it was read from the start. */
  renumbered: boolean
  handled: number
  left: number
  /** What `decide` threw, when it did: the reading stopped at that message, the cursor before it. */
  failure?: unknown
}

/** The folder handled messages are moved to, made when missing (its parts joined by the server's delimiter). */
export const PROCESSED_FOLDER = ['Mailroom', 'Processed']

/**
 * Reads the messages that arrived in `folder` since `cursor`, oldest first, without marking
 * them seen, and hands each to `decide`. Those it handled are then marked seen and, with
 * `move`, moved to PROCESSED_FOLDER; nothing is ever deleted. A changed UIDVALIDITY means the
 * old last UID says nothing any more, so the folder is read anew. Read from its start (the first
 * time, or anew), only the messages that arrived `since` are read, when given.
 *
 * The cursor returned stands after the last message decided; should `decide` throw, the messages
 * decided before it are still marked and moved, and the answer says what failed: the next reading
 * starts at that message.
 */
export async function readFolder(
  client: ImapFlow,
  folder: string,
  cursor: MailboxCursor,
  options: ReadLimits & { move: boolean; since?: Date },
  decide: (message: FolderMessage) => Promise<MessageFate>,
): Promise<FolderReading> {
  const lock = await client.getMailboxLock(folder)
  try {
    const uidValidity = client.mailbox ? String(client.mailbox.uidValidity) : null
    const renumbered = cursor.uidValidity !== null && uidValidity !== cursor.uidValidity
    const after = renumbered || cursor.uidValidity === null ? 0 : cursor.lastUid
    const uids = await newUids(client, after, options.messages, after === 0 ? options.since : undefined)
    const decided = await decideEach(client, uids, options.maxBytes, decide)
    if (decided.handled.length > 0) await settleHandled(client, decided.handled, options.move)
    return {
      cursor: { uidValidity, lastUid: decided.lastUid ?? after },
      renumbered,
      handled: decided.handled.length,
      left: decided.left,
      ...(decided.failure === undefined ? {} : { failure: decided.failure }),
    }
  } finally {
    lock.release()
  }
}

async function newUids(client: ImapFlow, after: number, limit: number, since?: Date): Promise<number[]> {
  // "n:*" always names the last message, even one older than n: filter by the UID itself.
  const query = since ? { uid: `${after + 1}:*`, since } : { uid: `${after + 1}:*` }
  const found = (await client.search(query, { uid: true })) || []
  return found
    .filter((uid) => uid > after)
    .sort((a, b) => a - b)
    .slice(0, limit)
}

interface Decided {
  handled: number[]
  left: number
  lastUid: number | undefined
  failure?: unknown
}

/**
 * One message at a time, as the server sends them (in UID order, as their sequence numbers go),
 * each decided as it arrives and let go, never the whole reading's sources gathered first. No
 * other command may run while a FETCH is read: the marking waits for its end, and after a
 * failure the rest of the answer is only drained.
 */
async function decideEach(
  client: ImapFlow,
  uids: number[],
  maxBytes: number,
  decide: (message: FolderMessage) => Promise<MessageFate>,
): Promise<Decided> {
  const decided: Decided = { handled: [], left: 0, lastUid: undefined }
  if (uids.length === 0) return decided
  const query = { uid: true, source: { maxLength: maxBytes } }
  for await (const m of client.fetch(uids.join(','), query, { uid: true })) {
    if (decided.failure !== undefined) continue
    try {
      const fate = m.source ? await decide({ uid: m.uid, source: m.source }) : 'left'
      if (fate === 'handled') decided.handled.push(m.uid)
      else decided.left++
      decided.lastUid = m.uid
    } catch (error) {
      decided.failure = error
    }
  }
  return decided
}

async function settleHandled(client: ImapFlow, uids: number[], move: boolean): Promise<void> {
  const range = uids.join(',')
  await client.messageFlagsAdd(range, ['\\Seen'], { uid: true })
  if (!move || !canMoveAlone(client)) return
  const processed = await client.mailboxCreate(PROCESSED_FOLDER)
  await client.messageMove(range, processed.path, { uid: true })
}

/**
 * Whether a move touches only the messages moved. Without MOVE, imapflow copies, flags the
 * originals deleted and expunges; without UIDPLUS that expunge would also remove every message
 * the owner had flagged deleted in the folder. Such a server keeps handled reports in place.
 */
function canMoveAlone(client: ImapFlow): boolean {
  return client.capabilities.has('MOVE') || client.capabilities.has('UIDPLUS')
}
