import type { Clock } from './clock.ts'
import type { Config } from './config.ts'
import type { Sql } from './db/sql.ts'
import type { FastPath } from './fast-path/fast-path.ts'
import type { Logger } from './log.ts'
import type { Metrics } from './metrics.ts'
import type { TransportPool } from './smtp/pool.ts'

/**
 * What every entry point (API, worker, operator command) runs on, made by openServices
 * (src/open-services.ts). Domain code never takes it whole: each function takes the few
 * members it uses.
 */
export interface Services {
  config: Config
  log: Logger
  sql: Sql
  /** Connection string of the database `sql` talks to (the worker opens its own pool on it). */
  databaseUrl: string
  /** MAILROOM_SECRET, the key material for SMTP passwords at rest. */
  secret: string
  /** This process's Prometheus metrics (GET /metrics). */
  metrics: Metrics
  /** This process's SMTP transports, one pool per connection, shared by every send path. */
  transports: TransportPool
  /**
   * This process's caller and connection caches, and the send path's statements shared in
   * rounds (src/fast-path/README.md), on `sql`.
   */
  fastPath: FastPath
  /** The time this process decides by; ahead of the wall clock as far as mailroom_now() is. */
  clock: Clock
  /** Migrations this process applied on opening (empty when the schema was current). */
  appliedMigrations: string[]
  close(): Promise<void>
}
