import type { Recheck } from '../db/fast-path.ts'
import { settleAttempts } from '../db/outbox-records.ts'
import type { AttemptSettlement, MessageBodies } from '../db/outbox-types.ts'
import { enqueueRechecked, type NotQueued, type Queued, type QueuedMessage } from '../db/queue-entry.ts'
import {
  type AttemptToRecord,
  type FindingsAsked,
  recordSendAttempts,
  type SendAttempt,
  type SendFindings,
  sendFindings,
} from '../db/send-attempts.ts'
import type { Sql } from '../db/sql.ts'
import { KeyedRounds, Rounds } from './rounds.ts'

/**
 * The statements of concurrent POST /sends and /enqueues through one connection, in rounds per
 * connection (src/fast-path/rounds.ts): requests that reach the database together claim their attempts
 * (or queue their mail) together, and the attempts their SMTP sessions finish together (a queue
 * run's lanes' as well) are recorded together, one statement for a round rather than one a
 * request. One per process, built by openServices.
 */
export interface SendStatements {
  /** What a request finds (see sendFindings), looked up with whatever other requests then ask. */
  find(asked: FindingsAsked): Promise<SendFindings>
  /**
   * Records an attempt with the others of its connection (and limits) then waiting, in the order
   * they came.
   */
  attempt(attempt: AttemptToRecord): Promise<SendAttempt>
  /**
   * Records an attempt's outcome with the others of its connection then ready: POST /send's
   * delivered ones, and those of the connection's queue runs that give back no units.
   */
  settle(connectionId: number, attempt: AttemptSettlement): Promise<void>
  /**
   * Queues a message with the others of its connection then waiting (see enqueueRechecked):
   * `stale` if its recheck no longer holds, `suppressed` if it asked and a recipient is.
   */
  enqueue(connectionId: number, message: QueuedMessage & { recheck?: Recheck }): Promise<Queued | NotQueued>
}

/**
 * A round's share of the requests waiting: at most MAX_ITEMS, and however many large bodies wait
 * at once, no more than MAX_BODIES characters of them (one larger goes alone), since a round's
 * statement carries them in one JSON text (V8 caps a string at 512 Mi characters, PostgreSQL a
 * JSON value at 256 MB).
 */
const MAX_ITEMS = 64
const MAX_BODIES = 16 * 2 ** 20

const bodiesLength = (m: MessageBodies) => (m.text_body?.length ?? 0) + (m.html_body?.length ?? 0)

/** The send path's statements on the pool `sql`, each shared in rounds (see SendStatements). */
export function batchedSendStatements(sql: Sql): SendStatements {
  const findings = new Rounds((asked: FindingsAsked[]) => sendFindings(sql, asked), { maxItems: 256 })
  // Keyed by the limits too (they name the connection): a round's attempts share them.
  const attempts = new KeyedRounds<string, AttemptToRecord, SendAttempt>(
    (_, round) =>
      recordSendAttempts(
        sql,
        (round[0] as AttemptToRecord).limits,
        round.map((r) => r.attempt),
      ),
    { maxItems: MAX_ITEMS, sizeOf: (r) => bodiesLength(r.attempt), maxSize: MAX_BODIES },
  )
  const settlements = new KeyedRounds<number, AttemptSettlement, void>(
    async (connectionId, round) => {
      await settleAttempts(sql, connectionId, round)
      return []
    },
    { maxItems: MAX_ITEMS },
  )
  const queued = new KeyedRounds(
    (connectionId: number, round: (QueuedMessage & { recheck?: Recheck })[]) =>
      enqueueRechecked(sql, connectionId, round),
    { maxItems: MAX_ITEMS, sizeOf: bodiesLength, maxSize: MAX_BODIES },
  )
  return {
    find: (asked) => findings.do(asked),
    attempt: (attempt) => attempts.do(JSON.stringify(attempt.limits), attempt),
    settle: (connectionId, attempt) => settlements.do(connectionId, attempt),
    enqueue: (connectionId, message) => queued.do(connectionId, message),
  }
}
