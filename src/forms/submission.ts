import { AppError, invalidInput } from '../app-error.ts'
import { selectConnection } from '../connections/selection.ts'
import { countSubmission as countFormSubmission, formByPublicId, type PublicFormRow } from '../db/forms.ts'
import { enqueueMessages } from '../db/queue-entry.ts'
import type { Sql } from '../db/sql.ts'
import { unstorableTextIssues } from '../db/storable-text.ts'
import { recordEvent } from '../db/webhooks.ts'
import { EmailAddressSchema } from '../generated/routes.ts'
import { newMessageId } from '../sending/attempts.ts'
import { countSubmission, FORM_SUBMISSIONS_PER_HOUR } from '../signups/submission-limit.ts'
import { escapeHtml } from '../templates/placeholders.ts'
import { followableRedirect } from './forms.ts'

/** The name of the hidden field people never fill and bots do. */
export const HONEYPOT_FIELD = '_mailroom_website'
/** At most this many fields in a submission (the honeypot included). */
export const MAX_FIELDS = 50
const MAX_FIELD_NAME = 200

/** The form at a public ID, whatever its account's plan (forms are on every plan). */
export async function publicForm(sql: Sql, publicId: string): Promise<PublicFormRow> {
  const form = /^[A-Za-z0-9_-]{22}$/.test(publicId) ? await formByPublicId(sql, publicId) : undefined
  if (!form) throw new AppError('FORM_NOT_FOUND', 'There is no form at this address')
  return form
}

/**
 * Whether a request from `origin` may submit: any site when the form lists no origins, else only
 * those listed and the service's own pages. A request without Origin is no browser's
 * cross-site request (browsers send it on every cross-origin POST) and is let through.
 */
export function originAllowed(form: PublicFormRow, origin: string | undefined, ownOrigin: string): boolean {
  if (origin === undefined || form.allowed_origins.length === 0) return true
  return origin === ownOrigin || form.allowed_origins.includes(origin)
}

export interface FormSubmission {
  publicId: string
  /** The fields in the order sent; a name may repeat. */
  fields: [string, string][]
  origin: string | undefined
  /** The service's own origin (its hosted page of the form). */
  ownOrigin: string
  client: string | undefined
}

/**
 * A submission: checked (origin, field count and names, storable text), counted against the
 * client's hourly limit, then emailed from the form's connection to its own address through
 * the queue, like POST /enqueue. A filled honeypot is answered like a success, and nothing is
 * stored or sent. Returns where to send the browser afterwards (null: a thank-you page).
 */
export async function submitForm(
  sql: Sql,
  submission: FormSubmission,
): Promise<{ redirectUrl: string | null }> {
  const form = await publicForm(sql, submission.publicId)
  if (!originAllowed(form, submission.origin, submission.ownOrigin)) {
    throw new AppError('ORIGIN_NOT_ALLOWED', 'This form does not take submissions from this site')
  }
  const { fields } = submission
  if (fields.length > MAX_FIELDS) {
    throw new AppError(
      'INVALID_SUBMISSION',
      `A submission has at most ${MAX_FIELDS} fields; this one has ${fields.length}`,
    )
  }
  if (fields.some(([name]) => name.length === 0 || name.length > MAX_FIELD_NAME)) {
    throw new AppError('INVALID_SUBMISSION', `A field's name is 1 to ${MAX_FIELD_NAME} characters`)
  }
  const issues = unstorableTextIssues(fields)
  if (issues.length) throw invalidInput(issues)
  // Checked before anything is sent: once the email is queued, the answer must not fail.
  const result = { redirectUrl: followableRedirect(form.redirect_url) }
  if (fields.some(([name, value]) => name === HONEYPOT_FIELD && value !== '')) return result
  await countSubmission(sql, `form:${form.id}`, submission.client, FORM_SUBMISSIONS_PER_HOUR)
  const shown = fields.filter(([name]) => name !== HONEYPOT_FIELD)
  const email = shown.find(([name]) => name === 'email')?.[1].trim()
  const replyTo = email !== undefined && EmailAddressSchema.safeParse(email).success ? email : undefined
  // Always the form's own connection, to its own address: no field can name another recipient.
  const connection = await selectConnection(
    sql,
    { accountId: form.account_id, connectionId: form.connection_id },
    undefined,
    'queued',
  )
  await sql.begin(async (tx) => {
    const [queued] = await enqueueMessages(tx, connection.id, [
      {
        accountId: form.account_id,
        from: connection.from_address,
        to: [connection.from_address],
        cc: [],
        bcc: [],
        subject: `New submission: ${form.name}`,
        ...submissionBodies(form.name, shown),
        messageId: newMessageId(connection.from_address),
        ...(replyTo === undefined ? {} : { replyTo }),
        source: 'form',
      },
    ])
    await countFormSubmission(tx, form.id)
    await recordEvent(tx, form.account_id, 'form.submitted', {
      form_id: form.public_id,
      form_name: form.name,
      outbox_id: queued?.id,
      fields: shown.map(([name, value]) => ({ name, value })),
    })
  })
  return result
}

/** The fields as text and as HTML, every name and value escaped in the HTML. */
export function submissionBodies(formName: string, fields: [string, string][]) {
  const text = [
    `New submission to the form "${formName}":`,
    '',
    ...(fields.length ? fields.map(([name, value]) => `${name}: ${value}`) : ['(no fields)']),
  ].join('\n')
  const rows = fields
    .map(
      ([name, value]) =>
        `<tr><th align="left" valign="top">${escapeHtml(name)}</th><td>${escapeHtml(value).replace(/\r?\n/g, '<br>')}</td></tr>`,
    )
    .join('')
  const html = `<p>New submission to the form “${escapeHtml(formName)}”:</p><table cellpadding="4">${rows || '<tr><td>(no fields)</td></tr>'}</table>`
  return { text_body: text, html_body: html }
}
