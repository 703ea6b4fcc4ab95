import type { Plan } from '../plans.ts'
import type { Db } from './sql.ts'

/** The forms table: hosted forms, whose submissions are emailed to their owner. */

export interface FormRow {
  id: number
  account_id: number
  public_id: string
  name: string
  connection_id: number | null
  redirect_url: string | null
  allowed_origins: string[]
  submissions: number
  created_at: string
  updated_at: string
}

export type PublicFormRow = FormRow & { plan: Plan }

export interface FormInput {
  name: string
  connectionId: number | null
  redirectUrl: string | null
  allowedOrigins: string[]
}

const COLUMNS = (db: Db) => db`
  f.id, f.account_id, f.public_id, f.name, f.connection_id, f.redirect_url, f.allowed_origins, f.submissions,
  api_timestamp(f.created_at) as created_at, api_timestamp(f.updated_at) as updated_at`

export async function insertForm(
  db: Db,
  accountId: number,
  publicId: string,
  form: FormInput,
): Promise<FormRow> {
  const [row] = await db<FormRow[]>`
    insert into forms as f (account_id, public_id, name, connection_id, redirect_url, allowed_origins)
    values (${accountId}, ${publicId}, ${form.name}, ${form.connectionId}, ${form.redirectUrl},
            ${form.allowedOrigins}::text[])
    returning ${COLUMNS(db)}`
  if (!row) throw new Error('the form was not recorded')
  return row
}

export function selectForms(db: Db, accountId: number): Promise<FormRow[]> {
  return db<FormRow[]>`select ${COLUMNS(db)} from forms f where account_id = ${accountId} order by id`
}

export async function formById(db: Db, id: number): Promise<FormRow | undefined> {
  const [row] = await db<FormRow[]>`select ${COLUMNS(db)} from forms f where id = ${id}`
  return row
}

export async function formByPublicId(db: Db, publicId: string): Promise<PublicFormRow | undefined> {
  const [row] = await db<PublicFormRow[]>`
    select ${COLUMNS(db)}, a.plan from forms f join accounts a on a.id = f.account_id
    where f.public_id = ${publicId}`
  return row
}

export async function updateFormRow(db: Db, id: number, form: FormInput): Promise<FormRow | undefined> {
  const [row] = await db<FormRow[]>`
    update forms f set name = ${form.name}, connection_id = ${form.connectionId},
      redirect_url = ${form.redirectUrl}, allowed_origins = ${form.allowedOrigins}::text[], updated_at = mailroom_now()
    where id = ${id}
    returning ${COLUMNS(db)}`
  return row
}

export async function deleteFormRow(db: Db, id: number): Promise<boolean> {
  const gone = await db`delete from forms where id = ${id}`
  return gone.count > 0
}

export async function countSubmission(db: Db, id: number): Promise<void> {
  await db`update forms set submissions = submissions + 1 where id = ${id}`
}
