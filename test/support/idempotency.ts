/**
 * POST /send under an Idempotency-Key: fresh keys and mails, the replay of a failure, and the
 * outbox records an account has.
 */
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { expect } from 'vitest'
import type { TestApp } from './app.ts'
import { type Body, postSend, type Reply, type Sender, type SenderOptions, startSender } from './sending.ts'

let seq = 0

export function email(extra: Record<string, unknown> = {}) {
  return { to: 'rcpt@example.com', subject: `Idempotency ${++seq}`, text_body: 'Hello', ...extra }
}

export function newKey(): string {
  return `key-${randomBytes(8).toString('hex')}`
}

export function failedReplay(outboxId: number, from: string): Body {
  return { success: false, replayed: true, outboxId, from, message: expect.any(String) }
}

export async function waitFor(
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

/** The requests of a test file's app that send under a key and read what they left. */
export function idempotencyRequests(app: TestApp) {
  function sender(options: SenderOptions = {}): Promise<Sender> {
    return startSender(app, 'idem', options)
  }

  function send(apiKey: string, body: unknown, idempotencyKey?: string): Promise<Reply> {
    return postSend(app, apiKey, body, idempotencyKey)
  }

  async function outboxIds(accountId: number): Promise<number[]> {
    const rows = await app.services.sql<{ id: number }[]>`
      select id from outbox where account_id = ${accountId} order by id`
    return rows.map((row) => row.id)
  }

  return { sender, send, outboxIds }
}
