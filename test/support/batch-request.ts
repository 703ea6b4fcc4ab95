/**
 * POST /send/batch as two Pro accounts, whose audiences, templates and batches are each
 * other's strangers, and the answers a request should get.
 */
import { beforeAll } from 'vitest'
import type { TestApp } from './app.ts'
import { humanText } from './matchers.ts'
import { type Sender, startSender } from './sending.ts'

export const inline = {
  subject: 'Hello {{first_name}}',
  text_body: 'Hi {{first_name}}',
  html_body: '<p>Hi</p>',
}

export function simple(status: number, error: string) {
  return { status, body: { error } }
}

/** The created body, exactly. */
export function created(batchId: number, total: number) {
  return {
    status: 200,
    body: {
      success: true,
      batch_id: batchId,
      total_count: total,
      message: humanText,
      status_url: `/v1/batches/${batchId}`,
    },
  }
}

interface Accounts {
  /** A Pro account with one connection; batches here are never sent (no worker runs). */
  pro: Sender
  /** Another Pro account, whose audiences, templates and batches are not `pro`'s. */
  other: Sender
}

/** The two accounts of a test file's app, made before its tests. */
export function useBatchAccounts(app: TestApp): Accounts {
  const accounts = {} as Accounts
  beforeAll(async () => {
    ;[accounts.pro, accounts.other] = await Promise.all([
      startSender(app, 'batchreq', { plan: 'pro' }),
      startSender(app, 'batchother', { plan: 'pro' }),
    ])
  })
  return accounts
}
