import { AppError } from '../app-error.ts'
import type { HostedContext } from './env.ts'

/**
 * A public submission's fields, in the order sent, from a browser form (urlencoded or
 * multipart: fields only) or a JSON object of plain values. The body's size is bounded before
 * this reads it (see app.ts).
 */
export async function submittedFields(c: HostedContext): Promise<[string, string][]> {
  const type = (c.req.header('content-type') ?? '').toLowerCase()
  if (type.startsWith('application/x-www-form-urlencoded')) {
    return [...new URLSearchParams(await c.req.text()).entries()]
  }
  if (type.startsWith('multipart/form-data')) return multipartFields(c)
  if (type.startsWith('application/json')) return jsonFields(await c.req.text())
  throw new AppError(
    'INVALID_SUBMISSION',
    'Send the fields as a form (application/x-www-form-urlencoded or multipart/form-data) or as JSON',
  )
}

async function multipartFields(c: HostedContext): Promise<[string, string][]> {
  let data: FormData
  try {
    // Through Hono's cache: the body's bytes were read already (their fields counted).
    data = await c.req.formData()
  } catch {
    throw new AppError('INVALID_SUBMISSION', 'The form data could not be read')
  }
  const fields: [string, string][] = []
  let file = false
  data.forEach((value, name) => {
    if (typeof value === 'string') fields.push([name, value])
    // A file input left empty sends an empty part without a name: nothing was attached.
    else if (value.size > 0 || value.name !== '') file = true
  })
  if (file) throw new AppError('INVALID_SUBMISSION', 'Files are not accepted: send text fields only')
  return fields
}

function jsonFields(text: string): [string, string][] {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw new AppError('INVALID_JSON', 'The body is not valid JSON')
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new AppError('INVALID_SUBMISSION', 'Send a JSON object of fields')
  }
  return Object.entries(body).map(([name, value]) => {
    if (value === null) return [name, '']
    if (typeof value === 'string') return [name, value]
    if (typeof value === 'number' || typeof value === 'boolean') return [name, String(value)]
    throw new AppError(
      'INVALID_SUBMISSION',
      `The field ${name.slice(0, 100)} is not text, a number or a boolean`,
    )
  })
}
