import type { Db } from './sql.ts'

/** The templates table. */

export interface TemplateRow {
  id: number
  user_id: number
  name: string
  subject: string
  text_body: string | null
  html_body: string | null
  created_at: string
  updated_at: string
}

export interface TemplateFields {
  name: string
  subject: string
  text_body: string | null
  html_body: string | null
}

const COLUMNS = (db: Db) => db`
  id, account_id as user_id, name, subject, text_body, html_body,
  api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at`

export function selectTemplates(db: Db, accountId: number): Promise<TemplateRow[]> {
  return db<TemplateRow[]>`select ${COLUMNS(db)} from templates where account_id = ${accountId} order by id`
}

export async function countTemplates(db: Db, accountId: number): Promise<number> {
  const [row] = await db<{ used: number }[]>`
    select count(*)::int as used from templates where account_id = ${accountId}`
  return row?.used ?? 0
}

export async function insertTemplate(
  db: Db,
  accountId: number,
  fields: TemplateFields,
): Promise<TemplateRow> {
  const [row] = await db<TemplateRow[]>`
    insert into templates (account_id, name, subject, text_body, html_body)
    values (${accountId}, ${fields.name}, ${fields.subject}, ${fields.text_body}, ${fields.html_body})
    returning ${COLUMNS(db)}`
  if (!row) throw new Error('the template was not recorded')
  return row
}

export async function templateById(db: Db, id: number, forUpdate = false): Promise<TemplateRow | undefined> {
  const [row] = await db<TemplateRow[]>`
    select ${COLUMNS(db)} from templates where id = ${id} ${forUpdate ? db`for update` : db``}`
  return row
}

export async function updateTemplateRow(db: Db, id: number, fields: TemplateFields): Promise<TemplateRow> {
  const [row] = await db<TemplateRow[]>`
    update templates set name = ${fields.name}, subject = ${fields.subject}, text_body = ${fields.text_body},
      html_body = ${fields.html_body},
      updated_at = case when (name, subject, text_body, html_body)
          is distinct from (${fields.name}, ${fields.subject}::text, ${fields.text_body}::text, ${fields.html_body}::text)
        then mailroom_now() else updated_at end
    where id = ${id}
    returning ${COLUMNS(db)}`
  if (!row) throw new Error(`template ${id} vanished while locked`)
  return row
}

export async function deleteTemplateRow(db: Db, accountId: number, id: number): Promise<void> {
  await db`delete from templates where id = ${id} and account_id = ${accountId}`
}

/** A saved template's content, if it is the account's. */
export async function templateContent(
  db: Db,
  accountId: number,
  id: number,
): Promise<{ subject: string; text_body: string | null; html_body: string | null } | undefined> {
  const [row] = await db<{ subject: string; text_body: string | null; html_body: string | null }[]>`
    select subject, text_body, html_body from templates where id = ${id} and account_id = ${accountId}`
  return row
}
