/**
 * Mailroom scaled out. Two API processes (`mailroom start --no-worker`) and two
 * worker processes (`mailroom start --worker-only`) share one PostgreSQL, and /send, /enqueue, a
 * batch and hosted-form submissions go through both APIs at once, against connections with small
 * quotas and rates and a Free account at its daily limit. docs/decisions.md ("Quota, daily limit and
 * pacing"; "Delivery guarantees") says that the processes together never exceed a quota, a daily
 * limit or a rate, and that nothing accepted is lost or sent twice. The SMTP sinks are the judges:
 * their arrivals are counted per fixed UTC window, every accepted email arrived exactly once or is
 * still queued for the next window, and no Message-ID arrived twice.
 *
 * The database's clock (mailroom_now(), set for every session of the test database) reaches the
 * top of an hour during the run, so that mail left waiting when the first window's quota is used
 * up goes out in the second window, within the test.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import type { MailroomProcess } from '../support/queue.ts'
import {
  expectAcceptedArrived,
  expectAnswers,
  expectArrivalsAccounted,
  expectDailyLimit,
  expectQuotaWindows,
  expectRates,
  outboxOf,
} from './scale-out/checks.ts'
import { claimants, startCluster } from './scale-out/cluster.ts'
import { runLoad } from './scale-out/load.ts'

const app = useTestApp()
const processes: MailroomProcess[] = []

afterAll(async () => {
  await Promise.all(processes.splice(0).map((p) => p.stop()))
})

describe('two API processes and two worker processes on one database', () => {
  it('never exceed a quota, the daily limit or a rate; every accepted email arrives once or waits queued', {
    timeout: 150_000,
  }, async () => {
    const cluster = await startCluster(app, processes)
    const answers = await runLoad(cluster)

    const codes = expectAnswers(answers)
    const outbox = await outboxOf(cluster)
    expectArrivalsAccounted(outbox)
    const accepted = expectAcceptedArrived(cluster, answers, outbox)
    // Both processes of each kind took part.
    const servedBy = new Set(answers.filter((a) => a.status === 200).map((a) => a.api))
    expect(servedBy.size, 'API processes that accepted mail').toBe(2)
    expect(await claimants(app), 'worker processes that sent queued mail').toBe(2)
    const waiting = accepted.filter((r) => r.status === 'queued')
    expect(waiting.length, 'mail left waiting for the next window').toBeGreaterThan(0)

    expectQuotaWindows(cluster, outbox)
    expectDailyLimit(cluster, outbox, codes)
    await expectRates(cluster, outbox)
  })
})
