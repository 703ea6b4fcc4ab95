import type { z } from 'zod'
import { lockAccount } from '../accounts/accounts.ts'
import { PLAN_LIMITS } from '../accounts/plans.ts'
import { isStorableId } from '../db/ids.ts'
import type { Db, Sql } from '../db/sql.ts'
import { ACCESS_DENIED, ApiError, simpleError, validationError } from '../errors.ts'
import type { TemplateSchema } from '../generated/routes.ts'

/** A template exactly as the contract shows it. */
export type Template = z.infer<typeof TemplateSchema>

export interface TemplateContent {
  name: string
  subject: string
  text_body?: string | null
  html_body?: string | null
}

const COLUMNS = (sql: Db) => sql`
  id, account_id as user_id, name, subject, text_body, html_body,
  api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at`

export function listTemplates(sql: Sql, accountId: number): Promise<Template[]> {
  return sql<Template[]>`select ${COLUMNS(sql)} from templates where account_id = ${accountId} order by id`
}

export async function createTemplate(
  sql: Sql,
  accountId: number,
  content: TemplateContent,
): Promise<Template> {
  return sql.begin(async (tx) => {
    const plan = await lockAccount(tx, accountId)
    const [{ used } = { used: 0 }] = await tx<{ used: number }[]>`
      select count(*)::int as used from templates where account_id = ${accountId}`
    const limit = PLAN_LIMITS[plan].templates
    if (used >= limit) {
      throw new ApiError(403, {
        error: 'Template limit reached',
        limit,
        used,
        upgradeRequired: true,
        message: `The ${plan} plan allows ${limit} templates. Upgrade to Pro for unlimited templates.`,
      })
    }
    const [row] = await tx<Template[]>`
      insert into templates (account_id, name, subject, text_body, html_body)
      values (${accountId}, ${content.name}, ${content.subject}, ${content.text_body ?? null},
              ${content.html_body ?? null})
      returning ${COLUMNS(tx)}`
    return row as Template
  })
}

/** The account's template, or the specification's 404 / 403 when it is missing or someone else's. */
export async function getTemplate(
  sql: Db,
  accountId: number,
  id: number,
  forUpdate = false,
): Promise<Template> {
  if (!isStorableId(id)) return own(undefined, accountId)
  const [row] = await sql<Template[]>`
    select ${COLUMNS(sql)} from templates where id = ${id} ${forUpdate ? sql`for update` : sql``}`
  return own(row, accountId)
}

export async function updateTemplate(
  sql: Sql,
  accountId: number,
  id: number,
  change: Partial<TemplateContent>,
): Promise<Template> {
  return sql.begin(async (tx) => {
    const template = await getTemplate(tx, accountId, id, true)
    const next = { ...template, ...definedOnly(change) }
    if (next.text_body == null && next.html_body == null) {
      throw validationError([
        { path: [], message: 'At least one of text_body or html_body is required', code: 'custom' },
      ])
    }
    const [row] = await tx<Template[]>`
      update templates set name = ${next.name}, subject = ${next.subject}, text_body = ${next.text_body},
        html_body = ${next.html_body}, updated_at = now()
      where id = ${id}
      returning ${COLUMNS(tx)}`
    return row as Template
  })
}

export async function deleteTemplate(sql: Sql, accountId: number, id: number): Promise<void> {
  await getTemplate(sql, accountId, id)
  await sql`delete from templates where id = ${id} and account_id = ${accountId}`
}

function own(row: Template | undefined, accountId: number): Template {
  if (!row) throw simpleError(404, 'Template not found')
  if (row.user_id !== accountId) throw simpleError(403, ACCESS_DENIED)
  return row
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>
}
