/**
 * Queued mail delivered by a worker of a test file's app, and what its outbox record and retry
 * counters say.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { beforeAll, expect } from 'vitest'
import type { OutboxRecord } from '../../src/db/outbox-types.ts'
import type { TestApp } from './app.ts'
import { outboxRecord } from './queue.ts'
import { type Sender, type SenderOptions, startSender } from './sending.ts'

/** Starts a worker for `app` before the file's tests; returns the requests and checks on its mail. */
export function useDelivery(app: TestApp) {
  beforeAll(async () => {
    await app.worker()
  })

  function sender(options: SenderOptions = {}): Promise<Sender> {
    return startSender(app, 'queued', { plan: 'pro', ...options })
  }

  function record(s: Sender, id: number): Promise<OutboxRecord> {
    return outboxRecord(app, s.accountId, id)
  }

  /** The retry counters the outbox does not show: transient failures and push-backs. */
  async function counters(id: number): Promise<{ failures: number; deferrals: number }> {
    const [row] = await app.services.sql<{ failures: number; deferrals: number }[]>`
      select failures, deferrals from outbox where id = ${id}`
    if (!row) throw new Error(`no outbox record ${id}`)
    return row
  }

  /**
   * Proves that nothing happens for `ms`: the sink gets nothing and the record stays queued with
   * no attempt made, checked throughout.
   */
  async function expectHeld(s: Sender, id: number, ms = 1_500): Promise<void> {
    const until = Date.now() + ms
    while (Date.now() < until) {
      expect(s.sink.messages).toHaveLength(0)
      expect(await record(s, id)).toMatchObject({ status: 'queued', attempts: 0 })
      await sleep(100)
    }
  }

  return { sender, record, counters, expectHeld }
}
