import type { WorkerEvents } from 'graphile-worker'

/**
 * How soon after a notice of new jobs a worker that found none looks once more, until when, and
 * at most how many times for one notice.
 */
const HIDDEN_JOB_RETRY_MS = 15
const HIDDEN_JOB_WINDOW_MS = 100
const HIDDEN_JOB_LOOKS = 3

/**
 * graphile-worker 0.17's runners each lock every free named queue while they look for a job, and
 * skip those locked: our two runners (queues, webhooks), both told of a new job at once, can each
 * hide the other's, and the one that lost waits for its next poll. A worker that found nothing
 * just after a notice looks again a moment later, a few times at most for that notice: a search
 * holds its locks for a few milliseconds, and looking on would cost a query per worker every few
 * milliseconds.
 */
export function lookAgainAfterHiddenJobs(events: WorkerEvents): void {
  let noticeAt = Number.NEGATIVE_INFINITY
  const looks = new WeakMap<object, { noticeAt: number; count: number }>()
  events.on('pool:listen:notification', () => {
    noticeAt = performance.now()
  })
  events.on('worker:getJob:empty', ({ worker }) => {
    if (performance.now() - noticeAt > HIDDEN_JOB_WINDOW_MS) return
    const seen = looks.get(worker)
    const count = seen?.noticeAt === noticeAt ? seen.count : 0
    if (count >= HIDDEN_JOB_LOOKS) return
    looks.set(worker, { noticeAt, count: count + 1 })
    const delay = HIDDEN_JOB_RETRY_MS * (0.5 + Math.random())
    setTimeout(() => {
      // A worker busy meanwhile ignores the nudge; one stopped meanwhile refuses it (an assertion).
      try {
        worker.nudge()
      } catch {}
    }, delay).unref()
  })
}
