import { invalidInput, type ValidationIssue } from '../app-error.ts'
import { shown } from '../audiences/member-lines.ts'
import { SuppressionCreateRequestSchema } from '../generated/routes.ts'
import type { SuppressionScope } from './strength.ts'

/**
 * Addresses typed one per line (blank lines skipped, spaces around each trimmed) as the request
 * `POST /suppressions` takes, with the API's bounds (1 to 1000 addresses, each checked); or the
 * validation refusal, naming each line that is not an address.
 */
export function typedSuppressions(
  text: string,
  scope: string,
): { emails: string[]; scope: SuppressionScope } {
  const lines = text
    .split(/\r\n|\r|\n/)
    .map((typed, i) => ({ line: i + 1, email: typed.trim() }))
    .filter((l) => l.email !== '')
  const result = SuppressionCreateRequestSchema.safeParse({ emails: lines.map((l) => l.email), scope })
  if (result.success) return { emails: result.data.emails, scope: result.data.scope ?? 'all' }
  const issues = result.error.issues
  const count = issues.find((issue) => issue.path.length === 1 && issue.path[0] === 'emails')
  if (count?.code === 'too_small') throw refusal(['addresses'], 'type at least one, one per line')
  if (count?.code === 'too_big') {
    throw refusal(['addresses'], `at most ${count.maximum} at a time (${lines.length} given)`)
  }
  // An address can break more than one rule (its length and its form): its line is said once.
  const said = new Map<string, ValidationIssue>()
  for (const issue of issues) {
    const at = issue.path[0] === 'emails' ? lines[Number(issue.path[1])] : undefined
    const path = at ? `line ${at.line}` : 'scope'
    const message = at ? `“${shown(at.email)}” is not an email address` : 'must be all or marketing'
    if (!said.has(path)) said.set(path, { path: [path], message, code: issue.code })
  }
  throw invalidInput([...said.values()])
}

function refusal(path: string[], message: string) {
  return invalidInput([{ path, message, code: 'custom' }])
}
