/**
 * Provider push-back makes the connection's queue back off as a whole (provider push-back makes
 * the batch back off and resume): once the server asks to slow down, no further
 * message is tried on that connection until the back-off ends.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { expect, it } from 'vitest'
import { listConnections } from '../../src/connections/connections.ts'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import { useTestApp } from '../support/app.ts'
import { email, enqueued, waitForOutbox } from '../support/queue.ts'
import { startSender } from '../support/sending.ts'

const LANES = 4
const PUSHBACK_MS = 4_000

const app = useTestApp()

it('after a 451 no other message is tried before the back-off ends; then all are delivered', async () => {
  const s = await startSender(app, 'pushback', {
    plan: 'pro',
    behaviour: { rejectData: { code: 451, message: '4.7.1 Try again later' } },
  })
  const ids: number[] = []
  for (let i = 0; i < 12; i++) ids.push(await enqueued(app, s.key, email({ to: `p${i}@example.com` })))
  await app.worker({ lanes: LANES, retry: retryPolicy(200, 3, PUSHBACK_MS) })
  await waitForOutbox(app, s.accountId, ids[0] as number, (r) => r.attempts > 0 && r.status === 'queued')
  await sleep(1_500)

  const records = await app.services.sql<{ attempts: number; status: string }[]>`
    select attempts, status from outbox where account_id = ${s.accountId}`
  const attempts = records.reduce((sum, r) => sum + r.attempts, 0)
  // Only the messages already in flight when the first 451 came back were tried.
  expect(attempts).toBeGreaterThanOrEqual(1)
  expect(attempts).toBeLessThanOrEqual(LANES)
  expect(records.every((r) => r.status === 'queued')).toBe(true)
  const [connection] = await listConnections(app.services.sql, s.accountId)
  expect(connection?.status, 'fewer than five push-backs in a row: not paused').toBe('active')

  s.sink.setBehaviour({ rejectData: undefined })
  await s.sink.waitForMessages(12, PUSHBACK_MS + 8_000)
  for (const id of ids) await waitForOutbox(app, s.accountId, id, (r) => r.status === 'sent')
}, 30_000)
