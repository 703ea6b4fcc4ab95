import type { ValidationIssue } from '../app-error.ts'
import { EmailAddressSchema } from '../generated/routes.ts'

/** An address quoted back in a message is cut to the longest a valid one can be. */
const QUOTED_ADDRESS = 254

/**
 * The addresses of a field in one of the three forms of `to` (one address, a comma-separated
 * string, an array), each checked: a bad one is an issue at the field (the string form) or at
 * its index (the array form).
 */
export function addressesOf(
  field: string,
  value: string | string[] | undefined,
  issues: ValidationIssue[],
): string[] {
  if (value === undefined) return []
  const fromString = typeof value === 'string'
  // Only spaces and tabs are trimmed: an address carrying CR or LF is refused, never cleaned up.
  const addresses = fromString ? value.split(',').map((part) => part.replace(/^[ \t]+|[ \t]+$/g, '')) : value
  if (fromString && addresses.length === 1 && addresses[0] === '') return []
  addresses.forEach((candidate, index) => {
    if (!EmailAddressSchema.safeParse(candidate).success) {
      issues.push({
        path: fromString ? [field] : [field, index],
        message:
          candidate === ''
            ? 'Empty address in the recipient list'
            : `Invalid email address: ${candidate.slice(0, QUOTED_ADDRESS)}`,
        code: 'invalid_format',
      })
    }
  })
  return addresses
}
