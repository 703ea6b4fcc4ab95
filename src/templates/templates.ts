import type { z } from 'zod'
import { lockAccount } from '../accounts/accounts.ts'
import { AppError, invalidInput } from '../app-error.ts'
import { isStorableId } from '../db/ids.ts'
import type { Db, Sql } from '../db/sql.ts'
import {
  countTemplates,
  deleteTemplateRow,
  insertTemplate,
  selectTemplates,
  type TemplateRow,
  templateById,
  updateTemplateRow,
} from '../db/templates.ts'
import type { TemplateSchema } from '../generated/routes.ts'
import { liftedBy, PLAN_LIMITS } from '../plans.ts'
import { counted } from '../wording.ts'

/** A template exactly as the contract shows it. */
export type Template = z.infer<typeof TemplateSchema>

export interface TemplateContent {
  name: string
  subject: string
  text_body?: string | null
  html_body?: string | null
}

export function listTemplates(db: Db, accountId: number): Promise<Template[]> {
  return selectTemplates(db, accountId)
}

export async function createTemplate(
  sql: Sql,
  accountId: number,
  content: TemplateContent,
): Promise<Template> {
  return sql.begin(async (tx) => {
    const plan = await lockAccount(tx, accountId)
    const used = await countTemplates(tx, accountId)
    const limit = PLAN_LIMITS[plan].templates
    if (used >= limit) {
      throw new AppError(
        'TEMPLATE_LIMIT_REACHED',
        `The ${plan} plan allows ${counted(limit, 'template')}; ${liftedBy(accountId)}`,
        { details: { limit, used, upgradeRequired: true } },
      )
    }
    return insertTemplate(tx, accountId, {
      name: content.name,
      subject: content.subject,
      text_body: content.text_body ?? null,
      html_body: content.html_body ?? null,
    })
  })
}

/** The account's template, or the specification's 404 / 403 when it is missing or someone else's. */
export async function getTemplate(
  db: Db,
  accountId: number,
  id: number,
  forUpdate = false,
): Promise<Template> {
  return own(isStorableId(id) ? await templateById(db, id, forUpdate) : undefined, accountId)
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
      throw invalidInput([
        { path: [], message: 'At least one of text_body or html_body is required', code: 'custom' },
      ])
    }
    return updateTemplateRow(tx, id, {
      name: next.name,
      subject: next.subject,
      text_body: next.text_body ?? null,
      html_body: next.html_body ?? null,
    })
  })
}

export async function deleteTemplate(db: Db, accountId: number, id: number): Promise<void> {
  await getTemplate(db, accountId, id)
  await deleteTemplateRow(db, accountId, id)
}

function own(row: TemplateRow | undefined, accountId: number): Template {
  if (!row) throw new AppError('TEMPLATE_NOT_FOUND')
  if (row.user_id !== accountId) throw new AppError('ACCESS_DENIED')
  return row
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>
}
