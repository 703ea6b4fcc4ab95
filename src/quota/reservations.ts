import type { SendingConnection } from '../db/connections.ts'
import type { Reservation } from '../db/outbox-types.ts'
import type { Db, Sql } from '../db/sql.ts'
import { giveBack, type Limits } from '../db/usage.ts'
import { PLAN_LIMITS, type Plan } from '../plans.ts'
import { bucketCapacity } from './pacing.ts'

/**
 * What `record` writes and the give-back of the units `reservations` took through the
 * connection, in one transaction: what ends an attempt (its settlement, or its claim undone) is
 * recorded if and only if its units are given back. The one way units go back.
 */
export async function recordGivingBack(
  sql: Sql,
  units: { accountId: number; connectionId: number; reservations: Reservation[] },
  record: (tx: Db) => Promise<unknown>[],
): Promise<void> {
  const { accountId, connectionId, reservations } = units
  await sql.begin((tx) =>
    Promise.all([...record(tx), ...reservations.map((r) => giveBack(tx, accountId, connectionId, r))]),
  )
}

/** The limits a send through `connection` counts against. */
export function sendingLimits(plan: Plan, accountId: number, connection: SendingConnection): Limits {
  const daily = PLAN_LIMITS[plan].dailyEmails
  const { quota, quota_period: period } = connection
  return {
    accountId,
    dailyLimit: Number.isFinite(daily) ? daily : null,
    connectionId: connection.id,
    quota: quota === null || period === null ? null : { quota, period },
    bucket: { capacity: bucketCapacity(connection.rate), perSecond: connection.rate / 60 },
  }
}
