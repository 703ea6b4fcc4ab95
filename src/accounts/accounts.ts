import { AppError } from '../app-error.ts'
import {
  type AccountRow,
  insertAccount,
  lockAccountPlan,
  selectAccount,
  selectAccounts,
  updatePlan,
} from '../db/accounts.ts'
import type { Db } from '../db/sql.ts'
import { isPlan, type Plan } from '../plans.ts'

export type Account = AccountRow

const EMAIL = /^[^\s@]+@[^\s@]+$/

export async function createAccount(db: Db, input: { email: string; plan?: string }): Promise<Account> {
  const plan = checkPlan(input.plan ?? 'free')
  if (!EMAIL.test(input.email))
    throw new AppError('INVALID_EMAIL', `"${input.email}" is not an email address`)
  const account = await insertAccount(db, input.email, plan)
  if (!account) throw new AppError('ACCOUNT_EXISTS', `an account with email ${input.email} already exists`)
  return account
}

export async function setPlan(db: Db, accountId: number, plan: string): Promise<Account> {
  const account = await updatePlan(db, accountId, checkPlan(plan))
  if (!account) throw accountNotFound(accountId)
  return account
}

export function listAccounts(db: Db): Promise<Account[]> {
  return selectAccounts(db)
}

/**
 * Locks the account row for the rest of the caller's transaction and returns its plan, so that
 * two concurrent creations cannot both pass a plan's count limit.
 */
export async function lockAccount(tx: Db, accountId: number): Promise<Plan> {
  const plan = await lockAccountPlan(tx, accountId)
  if (!plan) throw accountNotFound(accountId)
  return plan
}

/** Refuses an account id no account has: a list of nothing would read as an empty account. */
export async function requireAccount(db: Db, accountId: number): Promise<void> {
  if (!(await selectAccount(db, accountId))) throw accountNotFound(accountId)
}

function checkPlan(plan: string): Plan {
  if (!isPlan(plan)) throw new AppError('INVALID_PLAN', `plan must be "free" or "pro", not "${plan}"`)
  return plan
}

function accountNotFound(id: number) {
  return new AppError('ACCOUNT_NOT_FOUND', `no account with id ${id}`)
}
