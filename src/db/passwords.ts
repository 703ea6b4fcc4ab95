import type { Plan } from '../plans.ts'
import type { Db } from './sql.ts'

/** The account_passwords table: dashboard passwords, as hashes only. */

/** Stores the account's password hash; false when there is no such account. */
export async function storePasswordHash(db: Db, accountId: number, hash: string): Promise<boolean> {
  const stored = await db`
    insert into account_passwords (account_id, hash)
    select id, ${hash} from accounts where id = ${accountId}
    on conflict (account_id) do update set hash = excluded.hash, updated_at = mailroom_now()`
  return stored.count > 0
}

/** What signing in with `email` needs: the account (any case of the address) and its hash, if set. */
export interface SignInRecord {
  account_id: number
  email: string
  plan: Plan
  hash: string | null
}

export async function signInRecord(db: Db, email: string): Promise<SignInRecord | undefined> {
  const [row] = await db<SignInRecord[]>`
    select a.id as account_id, a.email, a.plan, p.hash
    from accounts a left join account_passwords p on p.account_id = a.id
    where lower(a.email) = lower(${email})`
  return row
}

export async function passwordHash(db: Db, accountId: number): Promise<string | undefined> {
  const [row] = await db<
    { hash: string }[]
  >`select hash from account_passwords where account_id = ${accountId}`
  return row?.hash
}

/** Whether any account can sign in yet (a new install has none). */
export async function anyPasswordSet(db: Db): Promise<boolean> {
  const [row] = await db<{ any: boolean }[]>`select exists (select 1 from account_passwords) as any`
  return row?.any ?? false
}
