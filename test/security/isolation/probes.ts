/** What an entry of the isolation walk's tables says: the request, and the answer it must get. */
import { expect } from 'vitest'
import type { Tenant } from './tenant.ts'

export type Params = Record<string, string | number>
export type Build<T> = (them: Tenant, me: Tenant) => T

/** What the caller must be answered: a status, and the exact JSON body or a sentence of the page. */
export interface Answer {
  status: number
  body?: unknown
  text?: string
}

export interface Probe {
  /** Path parameters, by name (`{id}` in the contract, `:id` in a route table). */
  params?: Build<Params>
  query?: Build<Params>
  /** JSON for the API, form fields for pages. */
  body?: Build<unknown>
  headers?: Build<Record<string, string>>
  /** The answer the caller gets; OWN for an operation on its own data (it succeeds). */
  answer: Answer | typeof OWN
  /** Order of the walk and of the controls: destructive requests come last. */
  phase?: number
  /**
   * The contrast the entry is proved against, made by the owner: by default the same request
   * with every ID its own. Hosted pages name theirs (a live address); false where another
   * entry's control already covers the route.
   */
  control?: false | ((owner: Tenant) => { params?: Params; body?: unknown })
  /** A dashboard request made by a browser without a session (it has read the sign-in page). */
  signedOut?: boolean
}

export const OWN = 'own' as const
/** Members removed, pages disabled: after the pages that show them. */
export const LATE = 1
export const DELETES = 2
export const ACCOUNT_WIDE = 3

export function probe(
  answer: Probe['answer'],
  params?: Build<Params>,
  more: Omit<Probe, 'answer' | 'params'> = {},
): Probe {
  return { answer, ...(params ? { params } : {}), ...more }
}

export const standard = (status: number, code: string): Answer => ({
  status,
  body: { code, message: expect.any(String) },
})
export const simple = (status: number, error: string): Answer => ({ status, body: { error } })

export const ACCESS_DENIED = simple(403, 'Access denied')
export const BATCH_NOT_FOUND = standard(404, 'BATCH_NOT_FOUND')
export const CONNECTION_NOT_FOUND = standard(403, 'CONNECTION_NOT_FOUND')
export const WEBHOOK_NOT_FOUND = standard(404, 'WEBHOOK_NOT_FOUND')
export const NOT_ON_YOUR_ACCOUNT: Answer = {
  status: 404,
  text: 'There is nothing at this address on your account.',
}
export const NOT_PUBLIC: Answer = { status: 404, text: 'Not found' }

export const email = (me: Tenant, extra: Record<string, unknown> = {}) => ({
  to: `${me.label}-to@example.com`,
  subject: `${me.label} probe`,
  text_body: 'probe',
  ...extra,
})
export const inlineTemplate = { subject: 'probe', text_body: 'probe' }
