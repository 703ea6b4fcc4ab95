/**
 * Contract test for `mailroom outbox list` on queued mail: it shows a queued
 * message's status, attempts and last error, run as the operator runs it.
 */
import { execFile } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import type { OutboxRecord } from '../../src/db/outbox-types.ts'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import { useTestApp } from '../support/app.ts'
import { TIMESTAMP } from '../support/matchers.ts'
import { email, enqueued, mailroomEnv, ROOT, waitForOutbox, waitForOutboxStatus } from '../support/queue.ts'
import { startSender } from '../support/sending.ts'

const app = useTestApp()

/** `mailroom outbox list --account <id>`: exit 0 and one JSON document on stdout. */
function outboxList(accountId: number): Promise<OutboxRecord[]> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['bin/mailroom.js', 'outbox', 'list', '--account', String(accountId)],
      { cwd: ROOT, env: mailroomEnv(app.db.url), timeout: 30_000 },
      (error, stdout, stderr) => {
        if (error) return reject(new Error(`mailroom outbox list failed: ${stderr}`))
        resolve(JSON.parse(stdout) as OutboxRecord[])
      },
    )
  })
}

function byId(records: OutboxRecord[], id: number): OutboxRecord | undefined {
  return records.find((r) => r.id === id)
}

describe('mailroom outbox list', () => {
  it('shows queued mail as queued, then sent with its attempts, and a failed one with its error', {
    timeout: 60_000,
  }, async () => {
    const s = await startSender(app, 'outbox', {
      plan: 'pro',
      behaviour: { rejectRecipients: ['refused@example.com'] },
    })
    // No worker yet: both wait in the queue.
    const good = await enqueued(app, s.key, email({ to: 'ada@example.com' }))
    const bad = await enqueued(app, s.key, email({ to: 'refused@example.com' }))

    const queued = await outboxList(s.accountId)
    for (const id of [good, bad]) {
      expect(byId(queued, id)).toMatchObject({
        status: 'queued',
        attempts: 0,
        error: null,
        next_attempt_at: expect.stringMatching(TIMESTAMP),
        sent_at: null,
      })
    }

    await app.worker()
    await waitForOutboxStatus(app, s.accountId, good, 'sent')
    await waitForOutboxStatus(app, s.accountId, bad, 'failed')

    const settled = await outboxList(s.accountId)
    expect(byId(settled, good)).toMatchObject({
      status: 'sent',
      attempts: 1,
      to: ['ada@example.com'],
      next_attempt_at: null,
      sent_at: expect.stringMatching(TIMESTAMP),
    })
    expect(byId(settled, bad)).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: expect.stringMatching(/550.*5\.1\.1/),
      next_attempt_at: null,
      sent_at: null,
    })
  })

  it('shows mail waiting for a retry as queued, with its attempts, last error and next attempt', {
    timeout: 60_000,
  }, async () => {
    const s = await startSender(app, 'outbox', {
      plan: 'pro',
      behaviour: { rejectData: { code: 441, message: '4.4.1 Temporary failure, try again later' } },
    })
    // A worker that waits a minute after a transient failure, so the retry is still ahead.
    await app.stopWorkers()
    await app.worker({ retry: retryPolicy(60_000, 3, 60_000) })
    const id = await enqueued(app, s.key)
    await waitForOutbox(app, s.accountId, id, (r) => r.attempts === 1 && r.status === 'queued')

    const listed = byId(await outboxList(s.accountId), id)
    expect(listed).toMatchObject({
      status: 'queued',
      attempts: 1,
      error: expect.stringMatching(/441.*4\.4\.1 Temporary failure/),
      next_attempt_at: expect.stringMatching(TIMESTAMP),
    })
    const next = Date.parse(`${listed?.next_attempt_at?.replace(' ', 'T')}Z`)
    expect(next).toBeGreaterThan(Date.now() + 30_000)
  })
})
