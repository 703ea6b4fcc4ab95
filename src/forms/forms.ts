import { randomBytes } from 'node:crypto'
import { AppError, invalidInput } from '../app-error.ts'
import { selectAccount } from '../db/accounts.ts'
import { ownsConnection } from '../db/connections.ts'
import {
  deleteFormRow,
  type FormInput,
  type FormRow,
  formById,
  insertForm,
  selectForms,
  updateFormRow,
} from '../db/forms.ts'
import { isStorableId } from '../db/ids.ts'
import type { Db } from '../db/sql.ts'
import { unstorableTextIssues } from '../db/storable-text.ts'

/** A hosted form (docs/hosted-pages.md), as the operator command and dashboard show it. */
export interface Form {
  id: number
  public_id: string
  name: string
  connection_id: number | null
  url: string
  redirect_url: string | null
  allowed_origins: string[]
  submissions: number
  created_at: string
  updated_at: string
}

export interface FormSettings {
  name: string
  connectionId?: number | undefined
  redirectUrl?: string | undefined
  allowedOrigins?: string[] | undefined
}

const MAX_NAME = 200
const MAX_URL = 2000
const MAX_ORIGINS = 50

export function formUrl(publicUrl: string, publicId: string): string {
  return `${publicUrl}/forms/${publicId}`
}

function asForm(row: FormRow, publicUrl: string): Form {
  const { account_id: _account, ...rest } = row
  return { ...rest, url: formUrl(publicUrl, row.public_id) }
}

/** Checks the settings: a name, an http(s) redirect URL, origins written as browsers send them. */
async function checked(db: Db, accountId: number, settings: FormSettings): Promise<FormInput> {
  const name = settings.name.trim()
  if (!name || name.length > MAX_NAME) {
    throw new AppError('INVALID_NAME', `A form's name is 1 to ${MAX_NAME} characters`)
  }
  const issues = unstorableTextIssues(settings)
  if (issues.length) throw invalidInput(issues)
  const redirectUrl = settings.redirectUrl?.trim() || null
  if (redirectUrl !== null && CONTROL.test(redirectUrl)) {
    throw new AppError(
      'INVALID_FORM_SETTING',
      'The redirect URL cannot contain line breaks, tabs or other control characters',
    )
  }
  if (redirectUrl !== null && !isWebAddress(redirectUrl)) {
    throw new AppError(
      'INVALID_FORM_SETTING',
      `The redirect URL must be an http or https address: ${redirectUrl}`,
    )
  }
  const allowedOrigins = [...new Set((settings.allowedOrigins ?? []).map((o) => o.trim()).filter(Boolean))]
  if (allowedOrigins.length > MAX_ORIGINS) {
    throw new AppError('INVALID_FORM_SETTING', `A form allows at most ${MAX_ORIGINS} origins`)
  }
  for (const origin of allowedOrigins) {
    if (!isOrigin(origin)) {
      throw new AppError(
        'INVALID_FORM_SETTING',
        `An allowed origin is a scheme and host, like https://example.com (no path): ${origin}`,
      )
    }
  }
  if (settings.connectionId !== undefined) {
    const owned =
      isStorableId(settings.connectionId) && (await ownsConnection(db, accountId, settings.connectionId))
    if (!owned) {
      throw new AppError(
        'UNKNOWN_CONNECTION',
        `No connection with id ${settings.connectionId} on this account`,
      )
    }
  }
  return { name, connectionId: settings.connectionId ?? null, redirectUrl, allowedOrigins }
}

/**
 * C0 and C1 controls and DEL. The URL parser drops CR, LF and tabs without a word, so such an
 * address passes as http(s); as a Location header it cannot be sent at all.
 */
const CONTROL = /\p{Cc}/u

/**
 * Where a submission may send the browser: the form's redirect URL when it is one the settings
 * take today; a URL stored before they refused control characters gets the thank-you page (null).
 */
export function followableRedirect(stored: string | null): string | null {
  return stored !== null && !CONTROL.test(stored) && isWebAddress(stored) ? stored : null
}

function isWebAddress(text: string): boolean {
  if (text.length > MAX_URL || !URL.canParse(text)) return false
  return ['http:', 'https:'].includes(new URL(text).protocol)
}

/** `https://example.com` or `http://localhost:8080`: exactly what a browser's Origin header says. */
function isOrigin(text: string): boolean {
  return isWebAddress(text) && new URL(text).origin === text
}

export async function createForm(
  db: Db,
  accountId: number,
  settings: FormSettings,
  publicUrl: string,
): Promise<Form> {
  if (!isStorableId(accountId) || !(await selectAccount(db, accountId))) {
    throw new AppError('ACCOUNT_NOT_FOUND', `No account with id ${accountId}`)
  }
  const input = await checked(db, accountId, settings)
  // 128 bits: the address of a form tells nothing and cannot be guessed.
  const row = await insertForm(db, accountId, randomBytes(16).toString('base64url'), input)
  return asForm(row, publicUrl)
}

export async function listForms(db: Db, accountId: number, publicUrl: string): Promise<Form[]> {
  return (await selectForms(db, accountId)).map((row) => asForm(row, publicUrl))
}

/** The form; another account's (when `accountId` is given) is as missing as one that never was. */
async function ownForm(db: Db, accountId: number | null, id: number): Promise<FormRow> {
  const row = isStorableId(id) ? await formById(db, id) : undefined
  if (!row || (accountId !== null && row.account_id !== accountId)) {
    throw new AppError('FORM_NOT_FOUND', `No form with id ${id}`)
  }
  return row
}

export async function getForm(
  db: Db,
  accountId: number | null,
  id: number,
  publicUrl: string,
): Promise<Form> {
  return asForm(await ownForm(db, accountId, id), publicUrl)
}

export async function updateForm(
  db: Db,
  accountId: number,
  id: number,
  settings: FormSettings,
  publicUrl: string,
): Promise<Form> {
  await ownForm(db, accountId, id)
  const row = await updateFormRow(db, id, await checked(db, accountId, settings))
  if (!row) throw new AppError('FORM_NOT_FOUND', `No form with id ${id}`)
  return asForm(row, publicUrl)
}

export async function deleteForm(db: Db, accountId: number | null, id: number): Promise<void> {
  await ownForm(db, accountId, id)
  await deleteFormRow(db, id)
}
