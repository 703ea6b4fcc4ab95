/**
 * What an account's owner reads of a big outbox, each read timed one at a time (its latency, not
 * the service's throughput): the API's email list and its filters, one email, a big batch, and
 * the dashboard's outbox pages and searches. The account read is the fill's largest tenant
 * (a tenth of the records), or the bench's own on an empty database.
 */
import http from 'node:http'
import { buffer } from 'node:stream/consumers'
import { startSession } from '../../src/accounts/sessions.ts'
import { createKey } from '../../src/keys/keys.ts'
import type { Bench, Figures } from '../support.ts'

/** Reads per case at most, and the seconds a case may take before it stops short of them. */
const READS = Number(process.env.BENCH_READS ?? 100)
const CASE_SECONDS = Number(process.env.BENCH_READ_SECONDS ?? 20)
/** Reads of each case before those timed (a read that takes a minute at 10 million may want none). */
const WARM_READS = Number(process.env.BENCH_READ_WARM ?? 3)
export const READ_TARGET = { p99UnderMs: 100 }

type Get = (path: string) => Promise<string>

function getter(base: string, headers: Record<string, string>): Get {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  return (path) =>
    new Promise((resolve, reject) => {
      http
        .get(`${base}${path}`, { agent, headers }, async (response) => {
          const text = (await buffer(response)).toString()
          if (response.statusCode !== 200)
            reject(new Error(`GET ${path} answered ${response.statusCode}: ${text.slice(0, 200)}`))
          else resolve(text)
        })
        .on('error', reject)
    })
}

/** `path(i)` read READS times one after another (after WARM_READS), or for CASE_SECONDS. */
async function timedReads(
  name: string,
  get: Get,
  path: (i: number) => Promise<string> | string,
): Promise<Figures> {
  for (let i = 0; i < WARM_READS; i++) await get(await path(i))
  const latencies: number[] = []
  const started = performance.now()
  for (let i = 0; i < READS && performance.now() - started < CASE_SECONDS * 1000; i++) {
    const target = await path(i)
    const t0 = performance.now()
    await get(target)
    latencies.push(performance.now() - t0)
  }
  const seconds = (performance.now() - started) / 1000
  return { name, count: latencies.length, seconds, latencies, paced: true, target: READ_TARGET }
}

const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10)

/** Every read of the account, one row each. */
export async function measureReads(bench: Bench): Promise<Figures[]> {
  const sql = bench.services.sql
  const accountId = bench.fill?.bigAccountId ?? bench.accountId
  const { key } = await createKey(sql, { accountId, name: 'bench reads' })
  const { token } = await startSession(sql, accountId)
  const api = getter(`${bench.url}/v1`, { authorization: `Bearer ${key}` })
  const page = getter(bench.url, { cookie: `mailroom_session=${token}` })
  const ids = (
    await sql<
      { id: number }[]
    >`select id from outbox where account_id = ${accountId} order by random() limit 500`
  ).map((r) => r.id)
  const someId = (i: number) => ids[(i * 7) % ids.length] ?? 0
  const [batch] = await sql<{ id: number }[]>`
    select id from batches where account_id = ${accountId} order by total_count desc limit 1`
  const batchId = bench.fill?.bigBatchId ?? batch?.id
  const recipient = bench.fill?.recipient ?? 'r17@example.com'
  // Each next page follows the cursor of the page before, from the newest page on.
  let cursor: string | null = null
  const nextPage = async () => {
    const path = cursor ? `/emails?cursor=${cursor}` : '/emails'
    const body = JSON.parse(await api(path)) as { pagination: { nextCursor: string | null } }
    cursor = body.pagination.nextCursor
    return cursor ? `/emails?cursor=${cursor}` : '/emails'
  }
  const rows: [string, Get, (i: number) => Promise<string> | string][] = [
    ['GET /emails (newest page)', api, () => '/emails'],
    ['GET /emails next page by cursor', api, nextPage],
    ['GET /emails?status=failed', api, () => '/emails?status=failed'],
    ['GET /emails?batch_id= (the big batch)', api, () => `/emails?batch_id=${batchId}`],
    ['GET /emails?tag=category:password-reset', api, () => '/emails?tag=category:password-reset'],
    ['GET /emails?date_from..date_to (3 days)', api, () => `/emails?date_from=${day(20)}&date_to=${day(18)}`],
    ['GET /emails/{id}', api, (i) => `/emails/${someId(i)}`],
    ['GET /batches/{id} (the big batch)', api, () => `/batches/${batchId}`],
    ['dashboard outbox (newest page)', page, () => '/dashboard/outbox'],
    ['dashboard outbox, a page deep (keyset)', page, (i) => `/dashboard/outbox?before=${someId(i)}`],
    ['dashboard outbox, status failed', page, () => '/dashboard/outbox?status=failed'],
    [
      'dashboard outbox, search a recipient',
      page,
      () => `/dashboard/outbox?q=${encodeURIComponent(recipient)}`,
    ],
    ['dashboard outbox, search a common word', page, () => '/dashboard/outbox?q=shipped'],
    ['dashboard outbox, search a rare word', page, () => '/dashboard/outbox?q=refund'],
    ['dashboard outbox, one record', page, (i) => `/dashboard/outbox/${someId(i)}`],
  ]
  const figures: Figures[] = []
  for (const [name, get, path] of rows) {
    if (name.includes('batch') && batchId === undefined) continue
    figures.push(await timedReads(name, get, path))
  }
  return figures
}
