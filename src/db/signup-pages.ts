import type { Plan } from '../plans.ts'
import type { Db } from './sql.ts'

/** The signup_pages and signup_confirmations tables: audiences' hosted sign-up pages. */

export interface SignupPageRow {
  audience_id: number
  slug: string
  title: string
  description: string | null
  connection_id: number | null
  double_opt_in: boolean
  enabled: boolean
  signups: number
  created_at: string
  updated_at: string
}

/** A page as the public side sees it, with the account behind it. */
export type PublicSignupPageRow = SignupPageRow & { account_id: number; plan: Plan }

export interface SignupPageInput {
  slug: string
  title: string
  description: string | null
  connectionId: number | null
  doubleOptIn: boolean
}

const COLUMNS = (db: Db) => db`
  p.audience_id, p.slug, p.title, p.description, p.connection_id, p.double_opt_in, p.enabled, p.signups,
  api_timestamp(p.created_at) as created_at, api_timestamp(p.updated_at) as updated_at`

/** Creates or replaces the audience's page (its count and `enabled` are kept on a change). */
export async function upsertSignupPage(
  db: Db,
  audienceId: number,
  page: SignupPageInput,
): Promise<SignupPageRow> {
  const [row] = await db<SignupPageRow[]>`
    insert into signup_pages as p (audience_id, slug, title, description, connection_id, double_opt_in)
    values (${audienceId}, ${page.slug}, ${page.title}, ${page.description}, ${page.connectionId},
            ${page.doubleOptIn})
    on conflict (audience_id) do update set slug = excluded.slug, title = excluded.title,
      description = excluded.description, connection_id = excluded.connection_id,
      double_opt_in = excluded.double_opt_in, updated_at = mailroom_now()
    returning ${COLUMNS(db)}`
  if (!row) throw new Error('the sign-up page was not recorded')
  return row
}

/** Whether another audience's page has the slug. */
export async function slugTaken(db: Db, slug: string, audienceId: number): Promise<boolean> {
  const [row] = await db`select 1 from signup_pages where slug = ${slug} and audience_id <> ${audienceId}`
  return row !== undefined
}

export async function signupPageOf(db: Db, audienceId: number): Promise<SignupPageRow | undefined> {
  const [row] = await db<
    SignupPageRow[]
  >`select ${COLUMNS(db)} from signup_pages p where audience_id = ${audienceId}`
  return row
}

export async function setSignupPageEnabled(
  db: Db,
  audienceId: number,
  enabled: boolean,
): Promise<SignupPageRow | undefined> {
  const [row] = await db<SignupPageRow[]>`
    update signup_pages p set enabled = ${enabled}, updated_at = mailroom_now() where audience_id = ${audienceId}
    returning ${COLUMNS(db)}`
  return row
}

export async function deleteSignupPage(db: Db, audienceId: number): Promise<void> {
  await db`delete from signup_pages where audience_id = ${audienceId}`
}

/** The page at `slug` with its account and plan, whatever its state. */
export async function signupPageBySlug(db: Db, slug: string): Promise<PublicSignupPageRow | undefined> {
  const [row] = await db<PublicSignupPageRow[]>`
    select ${COLUMNS(db)}, a.id as account_id, a.plan
    from signup_pages p join audiences au on au.id = p.audience_id join accounts a on a.id = au.account_id
    where p.slug = ${slug}`
  return row
}

/** Counts one address that became a member through the page. */
export async function countSignup(db: Db, audienceId: number): Promise<void> {
  await db`update signup_pages set signups = signups + 1 where audience_id = ${audienceId}`
}

// ---------------------------------------------------------------- Double opt-in

export async function insertConfirmation(
  db: Db,
  confirmation: { audienceId: number; email: string; tokenSha256: Buffer; validDays: number },
): Promise<void> {
  await db`
    insert into signup_confirmations (audience_id, email, token_sha256, expires_at)
    values (${confirmation.audienceId}, ${confirmation.email}, ${confirmation.tokenSha256},
            mailroom_now() + make_interval(days => ${confirmation.validDays}))`
}

export interface ConfirmationRow {
  id: number
  audience_id: number
  email: string
  expired: boolean
  confirmed: boolean
}

export async function confirmationByToken(db: Db, tokenSha256: Buffer): Promise<ConfirmationRow | undefined> {
  const [row] = await db<ConfirmationRow[]>`
    select id, audience_id, email, expires_at <= mailroom_now() as expired, confirmed_at is not null as confirmed
    from signup_confirmations where token_sha256 = ${tokenSha256}`
  return row
}

/** Marks the confirmation used; false when another request did first. */
export async function markConfirmed(db: Db, id: number): Promise<boolean> {
  const done = await db`
    update signup_confirmations set confirmed_at = mailroom_now() where id = ${id} and confirmed_at is null`
  return done.count > 0
}

/** Forgets confirmations that expired more than a day ago. */
export async function purgeExpiredConfirmations(db: Db): Promise<number> {
  const gone = await db`delete from signup_confirmations where expires_at < mailroom_now() - interval '1 day'`
  return gone.count
}
