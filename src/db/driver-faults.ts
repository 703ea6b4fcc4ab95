import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Codes postgres.js gives the faults of a connection that PostgreSQL closed or refused: shut down
 * by the administrator or on a crash (57P01-57P03), the socket reset or timed out, or not open at
 * all.
 */
const CONNECTION_FAULT_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECTION_ENDED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  '57P01',
  '57P02',
  '57P03',
])

/** SQLSTATE class 08: connection exceptions (08000, 08003, 08006, ...). */
const CONNECTION_EXCEPTION_CLASS = /^08[0-9A-Z]{3}$/

const DRIVER_FRAME = /node_modules[\\/]postgres[\\/]/

/** node-postgres (graphile-worker's driver) says a lost connection in words, with no code. */
const PG_CONNECTION_LOST = 'Connection terminated unexpectedly'
const PG_FRAME = /node_modules[\\/]pg[\\/]/

/**
 * Whether an error is the database driver losing a connection: a query's, or one that escaped
 * every caller. When
 * PostgreSQL goes away, postgres.js 3.4 lets some of these escape as an unhandled rejection (the
 * array-type lookup of a new connection, porsager/postgres#1192, #1205) or as an uncaught
 * TypeError from a write on a socket it already dropped (#1223), instead of failing the query.
 * graphile-worker's own driver, node-postgres, can let its lost connection escape the same way
 * (recording a failed job while the database is gone): a job left locked so is taken back by the
 * worker's liveness check. The pool opens a new connection for the next query, so nothing is lost
 * by carrying on.
 */
export function isDriverConnectionFault(reason: unknown): boolean {
  if (!(reason instanceof Error)) return false
  const code = (reason as { code?: unknown }).code
  if (typeof code === 'string' && (CONNECTION_FAULT_CODES.has(code) || CONNECTION_EXCEPTION_CLASS.test(code)))
    return true
  if (reason.message === PG_CONNECTION_LOST && PG_FRAME.test(reason.stack ?? '')) return true
  return reason instanceof TypeError && DRIVER_FRAME.test(reason.stack ?? '')
}

/**
 * `run`, tried again after each of `waitsMs` while it fails with a lost connection (the pool
 * opens a new one for the next try); any other error, or the last try's, is thrown.
 */
export async function throughConnectionFaults<T>(
  run: () => Promise<T>,
  waitsMs: readonly number[],
): Promise<T> {
  for (const waitMs of waitsMs) {
    try {
      return await run()
    } catch (error) {
      if (!isDriverConnectionFault(error)) throw error
      await sleep(waitMs)
    }
  }
  return run()
}
