import type { ZodError, ZodType } from 'zod'
import { invalidInput, zodIssues } from '../app-error.ts'
import { unstorableTextIssues } from '../db/storable-text.ts'
import type { DashboardContext } from './env.ts'

/** A submitted form (urlencoded or multipart), its text fields checked to be storable. */
export interface PostedFields {
  /** The field's text, '' when absent. */
  text(name: string): string
  /** The field's text trimmed, undefined when absent or blank. */
  optional(name: string): string | undefined
  checked(name: string): boolean
  file(name: string): File | undefined
}

export async function readPostedFields(c: DashboardContext): Promise<PostedFields> {
  // Hono keeps the parsed body: the form-token check and the handler read it once.
  const body = await c.req.parseBody().catch(() => {
    // A multipart type without its boundary, or a body that is not what its type says.
    throw invalidInput([
      { path: [], message: 'The form could not be read: send it as a browser does', code: 'custom' },
    ])
  })
  const texts: Record<string, string> = {}
  const files: Record<string, File> = {}
  for (const [name, value] of Object.entries(body)) {
    if (typeof value === 'string') texts[name] = value
    else if (value instanceof File) files[name] = value
  }
  const issues = unstorableTextIssues(texts)
  if (issues.length) throw invalidInput(issues)
  return {
    text: (name) => texts[name] ?? '',
    optional: (name) => texts[name]?.trim() || undefined,
    checked: (name) => name in texts && texts[name] !== '',
    file: (name) => (files[name] && files[name].size > 0 ? files[name] : undefined),
  }
}

/** A whole number typed in a form, or the validation refusal naming the field. */
export function wholeNumber(form: PostedFields, name: string, label: string): number | undefined {
  const raw = form.optional(name)
  if (raw === undefined) return undefined
  if (!/^[0-9]{1,9}$/.test(raw)) {
    throw invalidInput([{ path: [name], message: `${label} must be a whole number`, code: 'invalid_type' }])
  }
  return Number(raw)
}

/**
 * `value` as `schema` (a generated validator of the API) takes it, or the API's validation
 * refusal, its size problems said as a person would (zod says "Too small: expected string to
 * have >=1 characters").
 */
export function validated<T>(schema: ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value)
  if (!result.success) throw invalidInput(zodIssues(result.error, sizeMessage))
  return result.data
}

/** How a bound is said, inclusive or not. */
const BOUND_WORDS = { too_small: ['at least', 'more than'], too_big: ['at most', 'less than'] } as const

function sizeMessage(issue: ZodError['issues'][number]): string {
  if (issue.code !== 'too_small' && issue.code !== 'too_big') return issue.message
  const bound = Number(issue.code === 'too_small' ? issue.minimum : issue.maximum)
  if (issue.code === 'too_small' && issue.origin === 'string' && bound === 1) return 'cannot be empty'
  const [inclusive, exclusive] = BOUND_WORDS[issue.code]
  const unit = issue.origin === 'string' ? ' character' : issue.origin === 'array' ? ' item' : ''
  return `${issue.inclusive === false ? exclusive : inclusive} ${bound}${unit && bound !== 1 ? `${unit}s` : unit}`
}
