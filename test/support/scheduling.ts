/**
 * What the scheduling and cancel tests share: times relative to now, the email operations over
 * HTTP, and a worker on the service as it will be later (test/support/clock.ts), which sends
 * what has fallen due by then.
 */
import { scheduleExpansion, scheduleQueueRun } from '../../src/db/jobs.ts'
import type { TestApp } from './app.ts'
import { type Answer, answerOf } from './batches.ts'
import { type Later, later } from './clock.ts'
import { startTestWorker } from './queue.ts'

/** An RFC 3339 date-time `ms` from now, in UTC (`Z`) or at `offset` (e.g. `+02:00`). */
export function fromNow(ms: number, offset?: string): string {
  const at = new Date(Date.now() + ms)
  if (offset === undefined) return at.toISOString()
  const sign = offset.startsWith('-') ? -1 : 1
  const [hours, minutes] = offset.slice(1).split(':').map(Number) as [number, number]
  const shifted = new Date(at.getTime() + sign * (hours * 60 + minutes) * 60_000)
  return `${shifted.toISOString().slice(0, 23)}${offset}`
}

export function getEmail(app: Pick<TestApp, 'request'>, key: string, id: number): Promise<Answer> {
  return app.request(`/emails/${id}`, { key }).then(answerOf)
}

export function cancelEmail(
  app: Pick<TestApp, 'request'>,
  key: string,
  id: number | string,
): Promise<Answer> {
  return app.request(`/emails/${id}/cancel`, { method: 'POST', key }).then(answerOf)
}

export function moveEmail(app: Pick<TestApp, 'request'>, key: string, id: number | string, body: unknown) {
  return app.request(`/emails/${id}`, { method: 'PATCH', key, body }).then(answerOf)
}

export function cancelBatch(
  app: Pick<TestApp, 'request'>,
  key: string,
  id: number | string,
): Promise<Answer> {
  return app.request(`/batches/${id}/cancel`, { method: 'POST', key }).then(answerOf)
}

/** The email's status as GET shows it. */
export async function statusOf(app: Pick<TestApp, 'request'>, key: string, id: number): Promise<string> {
  return (await getEmail(app, key, id)).body.email.status as string
}

/**
 * Runs `body` with a worker on the service `aheadMs` from now, the app's own workers stopped (a
 * worker on the present clock would find nothing due and put the runs off until then). The runs
 * of `connections` and the expansions of `batches` are asked for at once: graphile-worker would
 * start them at their time on the database's real clock, which the test does not wait for.
 */
export async function atLaterTime<T>(
  app: TestApp,
  aheadMs: number,
  due: { connections?: number[]; batches?: number[] },
  body: (later: Later) => Promise<T>,
): Promise<T> {
  await app.stopWorkers()
  const ahead = await later(app, aheadMs)
  const worker = await startTestWorker(ahead.services)
  try {
    for (const id of due.connections ?? []) await scheduleQueueRun(ahead.services.sql, id)
    for (const id of due.batches ?? []) await scheduleExpansion(ahead.services.sql, id)
    return await body(ahead)
  } finally {
    await worker.stop()
  }
}

/** The API as the later service answers it (`request` relative to `/v1`, as TestApp's). */
export function apiAt(ahead: Later): Pick<TestApp, 'request'> {
  return { request: (path, init) => ahead.requestRoot(`/v1${path}`, init) }
}
