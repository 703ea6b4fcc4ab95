import type { Plan } from '../plans.ts'
import type { Db } from './sql.ts'

/** An account as every listing shows it. */
export interface AccountRow {
  id: number
  email: string
  plan: Plan
  created_at: string
  updated_at: string
}

const COLUMNS = (db: Db) =>
  db`id, email, plan, api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at`

/** The new account, or undefined when one with that address (in any case) exists. */
export async function insertAccount(db: Db, email: string, plan: Plan): Promise<AccountRow | undefined> {
  const [row] = await db<AccountRow[]>`
    insert into accounts (email, plan) values (${email}, ${plan})
    on conflict do nothing
    returning ${COLUMNS(db)}`
  return row
}

export async function updatePlan(db: Db, id: number, plan: Plan): Promise<AccountRow | undefined> {
  const [row] = await db<AccountRow[]>`
    update accounts set plan = ${plan}, updated_at = mailroom_now() where id = ${id} returning ${COLUMNS(db)}`
  return row
}

export function selectAccounts(db: Db): Promise<AccountRow[]> {
  return db<AccountRow[]>`select ${COLUMNS(db)} from accounts order by id`
}

/**
 * Locks the account row for the rest of the caller's transaction and returns its plan
 * (undefined when there is no such account).
 */
export async function lockAccountPlan(tx: Db, id: number): Promise<Plan | undefined> {
  const [row] = await tx<{ plan: Plan }[]>`select plan from accounts where id = ${id} for update`
  return row?.plan
}

export async function selectAccount(db: Db, id: number): Promise<AccountRow | undefined> {
  const [row] = await db<AccountRow[]>`select ${COLUMNS(db)} from accounts where id = ${id}`
  return row
}
