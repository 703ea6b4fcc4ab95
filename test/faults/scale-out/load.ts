/**
 * The scale-out scenario's load: /send, /enqueue, a batch and hosted-form submissions through
 * both API processes at once, every answer recorded with what was asked.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { waitFor } from '../../support/queue.ts'
import type { Body } from '../../support/sending.ts'
import { type Cluster, claimants, FREE_DAILY_LIMIT, LEAD_MS, type Paced } from './cluster.ts'

export interface Reply {
  /** The API process that answered. */
  api: string
  status: number
  body: Body
}

export interface Answer extends Reply {
  what: string
}

async function post(
  url: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<Reply> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
  return { api: url, status: res.status, body: (await res.json()) as Body }
}

export const BATCH_RECIPIENTS = Array.from({ length: 40 }, (_, i) => `batch${i}@example.com`)

/** Requests to the two APIs in turn, each answer recorded in `answers`. */
function clients(cluster: Cluster) {
  const { apis, pro, form } = cluster
  const api = (n: number) => apis[n % 2] as string
  const json = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' })

  const answers: Answer[] = []
  const record = (what: string, reply: Reply) => {
    answers.push({ what, ...reply })
    return reply
  }
  let seq = 0
  const send = (n: number, key: string, from: string, what: string) =>
    post(
      api(n),
      '/v1/send',
      { from, to: `send${++seq}@example.com`, subject: `${what} ${seq}`, text_body: 'Hi' },
      json(key),
    ).then((reply) => record(what, reply))
  const enqueue = (n: number, from: string) =>
    post(
      api(n),
      '/v1/enqueue',
      { from, to: `queued${++seq}@example.com`, subject: `enqueue ${seq}`, text_body: 'Hi' },
      json(pro.key),
    ).then((reply) => record('enqueue', reply))
  const submit = async (n: number) => {
    const res = await fetch(`${api(n)}/forms/${form.public_id}`, {
      method: 'POST',
      body: new URLSearchParams({ email: `visitor${n}@example.com`, message: `Submission ${n}` }),
      // Another visitor each time: the per-address limit is not what this test is about.
      headers: { 'x-forwarded-for': `198.51.100.${n + 1}`, accept: 'application/json' },
    })
    return record('form', { api: api(n), status: res.status, body: (await res.json()) as Body })
  }

  return { api, json, answers, record, send, enqueue, submit }
}

/** Until each paced connection has used the second window's quota or has nothing left to send. */
async function untilFinished(cluster: Cluster, answers: Answer[]): Promise<void> {
  const { app, processes, p1, p2, topOfHour } = cluster
  const secondWindow = new Date(topOfHour)
  const finished = async (c: Paced) => {
    const [row] = await app.services.sql<{ used: number; pending: number }[]>`
      select
        (select coalesce(sum(used), 0)::int from quota_usage
          where connection_id = ${c.connectionId} and window_start = ${secondWindow}) as used,
        (select count(*)::int from outbox
          where connection_id = ${c.connectionId} and status in ('queued', 'sending')) as pending`
    return row !== undefined && (row.used >= c.quota || row.pending === 0)
  }
  await waitFor(
    async () =>
      `both paced connections to finish (answers so far: ${answers.length}, output: ${processes.map((p) => p.output()).join('\n')})`,
    async () => ((await finished(p1)) && (await finished(p2)) ? true : undefined),
    LEAD_MS + 60_000,
    250,
  )
}

/** Nothing in flight any more: what arrived is all that will arrive. */
async function untilNothingInFlight(cluster: Cluster): Promise<void> {
  const { app } = cluster
  await waitFor(
    'no message in flight',
    async () => {
      const [row] = await app.services.sql<{ n: number }[]>`
        select count(*)::int as n from outbox where status = 'sending'`
      return row?.n === 0 ? true : undefined
    },
    30_000,
    100,
  )
}

/** Runs the load until the paced connections are done; returns every answer. */
export async function runLoad(cluster: Cluster): Promise<Answer[]> {
  const { app, pro, free, p1, p2, f } = cluster
  const { api, json, answers, record, send, enqueue, submit } = clients(cluster)
  // Everything at once, alternating between the two APIs.
  let trickling = true
  const trickle = (async () => {
    // /send keeps coming at both paced connections until the end: it meets the pacing, then
    // the quota, in both windows, while the queue takes its share of the same units.
    for (let n = 0; trickling; n++) {
      await send(n, pro.key, n % 3 === 2 ? p2.from : p1.from, 'send')
      await sleep(150)
    }
  })()
  const load = Promise.all([
    ...Array.from({ length: 30 }, (_, n) => enqueue(n, p1.from)),
    ...Array.from({ length: 14 }, (_, n) => enqueue(n, p2.from)),
    ...Array.from({ length: 12 }, (_, n) => submit(n)),
    post(
      api(1),
      '/v1/send/batch',
      {
        from: p1.from,
        name: 'scale-out',
        template: { subject: 'batch', text_body: 'Hi' },
        recipients: BATCH_RECIPIENTS,
      },
      json(pro.key),
    ).then((reply) => record('batch', reply)),
    (async () => {
      // The Free account beyond its daily limit, a few requests in flight at a time.
      for (let n = 0; n < FREE_DAILY_LIMIT + 6; n += 6) {
        await Promise.all(Array.from({ length: 6 }, (_, i) => send(n + i, free.key, f.from, 'free')))
      }
    })(),
  ])
  // More runs of each connection's queue than its one keyed job: both worker processes then
  // drain the same queue at once and race for the same units. A process drains a queue in
  // rounds, so a few extra runs may all go to the one that wakes first: runs are added until
  // both processes have claimed mail.
  for (let added = 0; added < 80 && (await claimants(app)) < 2; added++) {
    await app.services.sql`
      select graphile_worker.add_job('deliver_queue', json_build_object('connectionId', c.id))
      from unnest(${[p1.connectionId, p2.connectionId]}::int[]) as c(id)`
    await sleep(250)
  }
  await load

  await untilFinished(cluster, answers)
  trickling = false
  await trickle
  await untilNothingInFlight(cluster)
  return answers
}
