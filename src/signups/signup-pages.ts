import { createHash, randomBytes } from 'node:crypto'
import { requireFeature } from '../accounts/features.ts'
import { AppError, invalidInput } from '../app-error.ts'
import { selectConnection } from '../connections/selection.ts'
import { selectAccount } from '../db/accounts.ts'
import { audienceById, insertMembers } from '../db/audiences.ts'
import { ownsConnection } from '../db/connections.ts'
import { isStorableId } from '../db/ids.ts'
import { enqueueMessages } from '../db/queue-entry.ts'
import {
  confirmationByToken,
  countSignup,
  insertConfirmation,
  markConfirmed,
  type PublicSignupPageRow,
  type SignupPageRow,
  setSignupPageEnabled,
  signupPageBySlug,
  signupPageOf,
  slugTaken,
  upsertSignupPage,
} from '../db/signup-pages.ts'
import type { Db, Sql } from '../db/sql.ts'
import { unstorableTextIssues } from '../db/storable-text.ts'
import { recordMemberAdded } from '../db/webhooks.ts'
import { EmailAddressSchema } from '../generated/routes.ts'
import { newMessageId } from '../sending/attempts.ts'
import { countSubmission, SIGNUPS_PER_HOUR } from './submission-limit.ts'

/** An audience's hosted sign-up page (docs/hosted-pages.md). */
export interface SignupPage {
  audience_id: number
  slug: string
  url: string
  title: string
  description: string | null
  connection_id: number | null
  double_opt_in: boolean
  enabled: boolean
  signups: number
  created_at: string
  updated_at: string
}

export interface SignupPageSettings {
  slug: string
  title?: string | undefined
  description?: string | undefined
  connectionId?: number | undefined
  doubleOptIn?: boolean | undefined
}

const SLUG = /^[a-z0-9-]{3,64}$/
const MAX_TITLE = 200
const MAX_DESCRIPTION = 2000
/** How long a double opt-in link works. */
export const CONFIRMATION_DAYS = 7

export function signupPageUrl(publicUrl: string, slug: string): string {
  return `${publicUrl}/signup/${slug}`
}

function asPage(row: SignupPageRow, publicUrl: string): SignupPage {
  return { ...row, url: signupPageUrl(publicUrl, row.slug) }
}

/** The audience (checked to be a lasting one of the account, when one is given) and its account. */
async function audienceOf(db: Db, accountId: number | null, audienceId: number) {
  const audience = isStorableId(audienceId) ? await audienceById(db, audienceId) : undefined
  if (!audience || audience.temporary || (accountId !== null && audience.user_id !== accountId)) {
    throw new AppError('AUDIENCE_NOT_FOUND', `No audience with id ${audienceId}`)
  }
  const account = await selectAccount(db, audience.user_id)
  if (!account) throw new AppError('AUDIENCE_NOT_FOUND', `No audience with id ${audienceId}`)
  return { audience, plan: account.plan }
}

/**
 * Creates or changes the audience's page (Pro). Omitted settings keep their current value (a
 * new page: the audience's name as title, the default connection, no double opt-in).
 */
export async function setSignupPage(
  sql: Sql,
  accountId: number | null,
  audienceId: number,
  settings: SignupPageSettings,
  publicUrl: string,
): Promise<SignupPage> {
  const { audience, plan } = await audienceOf(sql, accountId, audienceId)
  requireFeature({ accountId: audience.user_id, plan }, 'audiences')
  if (!SLUG.test(settings.slug)) {
    throw new AppError('INVALID_SLUG', 'A slug is 3 to 64 characters: lower-case letters, digits and hyphens')
  }
  const title = settings.title?.trim()
  const description = settings.description?.trim()
  if ((title?.length ?? 0) > MAX_TITLE || (description?.length ?? 0) > MAX_DESCRIPTION) {
    throw new AppError(
      'INVALID_NAME',
      `A title is at most ${MAX_TITLE} characters, a description at most ${MAX_DESCRIPTION}`,
    )
  }
  const issues = unstorableTextIssues({ title, description })
  if (issues.length) throw invalidInput(issues)
  if (settings.connectionId !== undefined) {
    const owned =
      isStorableId(settings.connectionId) &&
      (await ownsConnection(sql, audience.user_id, settings.connectionId))
    if (!owned)
      throw new AppError(
        'UNKNOWN_CONNECTION',
        `No connection with id ${settings.connectionId} on this account`,
      )
  }
  return sql.begin(async (tx) => {
    if (await slugTaken(tx, settings.slug, audienceId)) {
      throw new AppError('SLUG_TAKEN', `The address /signup/${settings.slug} is taken; choose another slug`)
    }
    const current = await signupPageOf(tx, audienceId)
    const row = await upsertSignupPage(tx, audienceId, {
      slug: settings.slug,
      title: title || current?.title || audience.name,
      description: description === undefined ? (current?.description ?? null) : description || null,
      connectionId: settings.connectionId ?? current?.connection_id ?? null,
      doubleOptIn: settings.doubleOptIn ?? current?.double_opt_in ?? false,
    })
    return asPage(row, publicUrl)
  })
}

/** The audience's page, or undefined when it has none. */
export async function getSignupPage(
  db: Db,
  accountId: number | null,
  audienceId: number,
  publicUrl: string,
): Promise<SignupPage | undefined> {
  await audienceOf(db, accountId, audienceId)
  const row = await signupPageOf(db, audienceId)
  return row && asPage(row, publicUrl)
}

export async function enableSignupPage(
  db: Db,
  accountId: number | null,
  audienceId: number,
  enabled: boolean,
  publicUrl: string,
): Promise<SignupPage> {
  await audienceOf(db, accountId, audienceId)
  const row = await setSignupPageEnabled(db, audienceId, enabled)
  if (!row) throw new AppError('SIGNUP_PAGE_NOT_FOUND', `Audience ${audienceId} has no sign-up page`)
  return asPage(row, publicUrl)
}

// ---------------------------------------------------------------- The public side

/** A page as the public sees it, with what decides whether it is open (its account and plan). */
export type PublicSignupPage = PublicSignupPageRow

/** The page at `slug`, when the public may use it: enabled, and its account on Pro. */
export async function publicSignupPage(db: Db, slug: string): Promise<PublicSignupPage> {
  const page = SLUG.test(slug) ? await signupPageBySlug(db, slug) : undefined
  if (!page?.enabled || page.plan !== 'pro') {
    throw new AppError('SIGNUP_PAGE_NOT_FOUND', 'There is no sign-up page at this address')
  }
  return page
}

export interface Subscription {
  slug: string
  email: string
  /** A filled honeypot: answered as a success, nothing stored or sent. */
  honeypot: boolean
  client: string | undefined
}

/** What a sign-up came to, as the page tells it: joined, or asked to confirm by email. */
export type SignupOutcome = 'joined' | 'confirmation_sent'

/**
 * A sign-up through the page. The answer is the same whether the address is new or already a
 * member (or waiting for its confirmation): nothing tells who is subscribed. With double opt-in,
 * the address gets a confirmation email instead of becoming a member.
 */
export async function subscribe(sql: Sql, publicUrl: string, request: Subscription): Promise<SignupOutcome> {
  const page = await publicSignupPage(sql, request.slug)
  const outcome = page.double_opt_in ? 'confirmation_sent' : 'joined'
  if (request.honeypot) return outcome
  const email = request.email.trim()
  if (!EmailAddressSchema.safeParse(email).success) {
    throw invalidInput([{ path: ['email'], message: 'Enter a valid email address', code: 'invalid_format' }])
  }
  await countSubmission(sql, `signup:${page.slug}`, request.client, SIGNUPS_PER_HOUR)
  if (!page.double_opt_in) {
    await join(sql, page.audience_id, page.slug, email)
    return outcome
  }
  const token = randomBytes(32).toString('base64url')
  const link = `${publicUrl}/signup/confirm/${token}`
  const connection = await selectConnection(
    sql,
    { accountId: page.account_id, connectionId: page.connection_id },
    undefined,
    'queued',
  )
  await sql.begin(async (tx) => {
    await insertConfirmation(tx, {
      audienceId: page.audience_id,
      email,
      tokenSha256: sha256(token),
      validDays: CONFIRMATION_DAYS,
    })
    await enqueueMessages(tx, connection.id, [
      {
        accountId: page.account_id,
        from: connection.from_address,
        to: [email],
        cc: [],
        bcc: [],
        subject: `Confirm your subscription: ${page.title}`,
        text_body: [
          `Someone (hopefully you) asked to subscribe ${email} to "${page.title}".`,
          '',
          `Confirm here: ${link}`,
          '',
          `The link works for ${CONFIRMATION_DAYS} days. If you did not ask for this, ignore this email.`,
        ].join('\n'),
        messageId: newMessageId(connection.from_address),
        source: 'form',
      },
    ])
  })
  return outcome
}

/** Adds the address to the audience with the page's payload; counted when it is new. */
async function join(sql: Sql, audienceId: number, slug: string, email: string): Promise<void> {
  await sql.begin(async (tx) => {
    const inserted = await insertMembers(tx, audienceId, [
      { email, payload: { source: 'public_signup_page', slug } },
    ])
    if (inserted > 0)
      await Promise.all([countSignup(tx, audienceId), recordMemberAdded(tx, audienceId, email)])
  })
}

function sha256(token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

/** The page a confirmation link belongs to, when the link is valid (known and not expired). */
export async function pendingConfirmation(db: Db, token: string): Promise<{ title: string }> {
  const found = await validConfirmation(db, token)
  return { title: found.page.title }
}

async function validConfirmation(db: Db, token: string) {
  const confirmation = /^[A-Za-z0-9_-]{43}$/.test(token)
    ? await confirmationByToken(db, sha256(token))
    : undefined
  const page = confirmation && (await signupPageOf(db, confirmation.audience_id))
  if (!confirmation || !page || confirmation.expired) {
    throw new AppError('LINK_NOT_VALID', 'This confirmation link is not valid, or it expired')
  }
  return { confirmation, page }
}

/** Follows a confirmation link (its POST): the address becomes a member. Harmless when repeated. */
export async function confirmSubscription(sql: Sql, token: string): Promise<{ title: string }> {
  const { confirmation, page } = await validConfirmation(sql, token)
  if (await markConfirmed(sql, confirmation.id)) {
    await join(sql, confirmation.audience_id, page.slug, confirmation.email)
  }
  return { title: page.title }
}
