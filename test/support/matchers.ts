import { expect } from 'vitest'

/** Human text that may change: only required to be a non-empty string. */
export const humanText = expect.stringMatching(/\S/)

/** A timestamp as Mailroom shows it: `YYYY-MM-DD HH:MM:SS`. */
export const TIMESTAMP = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/

/** The 400 body of a request that failed validation with exactly these issues. */
export function validationBody(issues: { path: (string | number)[]; code: string }[]) {
  return {
    success: false,
    error: { name: 'ZodError', issues: issues.map((issue) => ({ ...issue, message: humanText })) },
  }
}

/** Slack between the database clock and this process's when comparing computed instants. */
const CLOCK_SLACK_MS = 5 * 60 * 1000

/** `timestamp` is a TIMESTAMP (UTC) within a few minutes of the instant `expected` (ms). */
export function expectAbout(timestamp: string | null, expected: number): void {
  expect(timestamp).not.toBeNull()
  expect(timestamp).toMatch(TIMESTAMP)
  const actual = Date.parse(`${(timestamp as string).replace(' ', 'T')}Z`)
  expect(Math.abs(actual - expected)).toBeLessThan(CLOCK_SLACK_MS)
}
