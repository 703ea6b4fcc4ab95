import type { Db, Sql } from '../db/sql.ts'
import { standardError } from '../errors.ts'
import { isPlan, type Plan } from './plans.ts'

export interface Account {
  id: number
  email: string
  plan: Plan
  created_at: string
  updated_at: string
}

const EMAIL = /^[^\s@]+@[^\s@]+$/

export async function createAccount(sql: Sql, input: { email: string; plan?: string }): Promise<Account> {
  const plan = checkPlan(input.plan ?? 'free')
  if (!EMAIL.test(input.email))
    throw standardError(400, 'INVALID_EMAIL', `"${input.email}" is not an email address`)
  const [account] = await sql<Account[]>`
    insert into accounts (email, plan) values (${input.email}, ${plan})
    on conflict do nothing
    returning id, email, plan, api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at`
  if (!account)
    throw standardError(409, 'ACCOUNT_EXISTS', `an account with email ${input.email} already exists`)
  return account
}

export async function setPlan(sql: Sql, accountId: number, plan: string): Promise<Account> {
  const [account] = await sql<Account[]>`
    update accounts set plan = ${checkPlan(plan)}, updated_at = now() where id = ${accountId}
    returning id, email, plan, api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at`
  if (!account) throw accountNotFound(accountId)
  return account
}

export async function listAccounts(sql: Sql): Promise<Account[]> {
  return sql<Account[]>`
    select id, email, plan, api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at
    from accounts order by id`
}

/**
 * Locks the account row for the rest of the caller's transaction and returns its plan, so that
 * two concurrent creations cannot both pass a plan's count limit.
 */
export async function lockAccount(tx: Db, accountId: number): Promise<Plan> {
  const [row] = await tx<{ plan: Plan }[]>`select plan from accounts where id = ${accountId} for update`
  if (!row) throw accountNotFound(accountId)
  return row.plan
}

function checkPlan(plan: string): Plan {
  if (!isPlan(plan)) throw standardError(400, 'INVALID_PLAN', `plan must be "free" or "pro", not "${plan}"`)
  return plan
}

function accountNotFound(id: number) {
  return standardError(404, 'ACCOUNT_NOT_FOUND', `no account with id ${id}`)
}
