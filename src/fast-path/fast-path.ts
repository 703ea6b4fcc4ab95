import type { Clock } from '../clock.ts'
import type { Sql } from '../db/sql.ts'
import { CallerCache } from './caller-cache.ts'
import { ConnectionCache } from './connection-cache.ts'
import { batchedSendStatements, type SendStatements } from './send-statements.ts'

/**
 * The fast path's state, one per process and database pool (src/fast-path/README.md): the
 * caches a request may go ahead on, and the send path's statements shared in rounds. Built by
 * openServices and handed down; nothing of it is a module's own.
 */
export interface FastPath {
  callers: CallerCache
  connections: ConnectionCache
  statements: SendStatements
}

/** The caches age on `clock`, the service's. */
export function openFastPath(sql: Sql, clock: Clock): FastPath {
  return {
    callers: new CallerCache(sql, clock),
    connections: new ConnectionCache(clock),
    statements: batchedSendStatements(sql),
  }
}
