import type { ValidationIssue } from '../app-error.ts'
import type { Tag } from '../db/outbox-types.ts'

/**
 * Tags, the labels an email is found by (openapi/openapi.yaml, Tags): the generated validator
 * checks their count and characters; what it cannot say is that a name comes once.
 */

/** Tags an email carries at most, and a listing filters by at most. */
export const MAX_TAGS = 10

/** The tags of a request with every repeated name an issue at its path in `issues`. */
export function checkedTags(tags: Tag[], issues: ValidationIssue[]): Tag[] {
  const seen = new Set<string>()
  for (const [index, { name }] of tags.entries()) {
    if (seen.has(name)) {
      const message = `The tag name ${name} is given twice; an email has one value per name`
      issues.push({ path: ['tags', index, 'name'], message, code: 'custom' })
    }
    seen.add(name)
  }
  return tags.map(({ name, value }) => ({ name, value }))
}

/**
 * A filter's `name:value` as a tag; undefined when it is not one (names and values hold no colon,
 * so the first one splits them).
 */
export function tagOfFilter(text: string): Tag | undefined {
  const match = /^([A-Za-z0-9_-]{1,256}):([A-Za-z0-9_-]{1,256})$/.exec(text)
  return match ? { name: match[1] as string, value: match[2] as string } : undefined
}
