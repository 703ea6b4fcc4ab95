/**
 * Batches run by a worker that retries quickly, and what the SMTP sink received of them.
 */
import { beforeAll } from 'vitest'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import type { TestApp } from './app.ts'
import type { SmtpSink } from './smtp-sink.ts'

/** Tries again after 50 ms doubling, gives up after 3 transient failures; push-back waits 50 ms. */
export const RETRY = retryPolicy(50, 3, 50)

export const template = { subject: 'Batch news', text_body: 'Hello from the batch' }

/** Starts a worker with RETRY for a test file's app before its tests. */
export function useBatchWorker(app: TestApp): void {
  beforeAll(async () => {
    await app.worker({ retry: RETRY })
  })
}

/** The recipients the sink received, with how many times each. */
export function receivedCounts(sink: SmtpSink): Map<string, number> {
  const counts = new Map<string, number>()
  for (const message of sink.messages) {
    for (const to of message.envelope.to) counts.set(to, (counts.get(to) ?? 0) + 1)
  }
  return counts
}
