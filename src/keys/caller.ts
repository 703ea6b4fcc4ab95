import type { Plan } from '../plans.ts'

/** Who a valid API key speaks for. */
export interface Caller {
  accountId: number
  keyId: number
  plan: Plan
  /** Set when the key is scoped to one connection. */
  connectionId: number | null
}
