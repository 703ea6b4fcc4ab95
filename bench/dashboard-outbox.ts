/**
 * The dashboard's outbox over 10,000 records of one account (and 10,000 of another): each
 * filter, search and page answered through the app in-process, HTML included, timed 20 times.
 * `node --import tsx bench/dashboard-outbox.ts`. Figures, not assertions.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { createAccount } from '../src/accounts/accounts.ts'
import { startSession } from '../src/accounts/sessions.ts'
import { loadConfig } from '../src/config.ts'
import type { Sql } from '../src/db/sql.ts'
import { createLogger } from '../src/log.ts'
import { openServices } from '../src/open-services.ts'
import { createWebApp } from '../src/web.ts'

const RECORDS = 10_000
const RUNS = 20

async function main() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-bench-outbox-'))
  // As root, the embedded PostgreSQL runs as `postgres`, which has to reach its data dir.
  await chmod(dir, 0o755)
  const services = await openServices(
    { ...loadConfig({}), dataDir: path.join(dir, 'data'), logLevel: 'warn' },
    createLogger('warn'),
  )
  try {
    const sql = services.sql
    const account = await createAccount(sql, { email: 'bench@example.com', plan: 'pro' })
    const other = await createAccount(sql, { email: 'other@example.com', plan: 'pro' })
    const { connections, batch } = await seedOutbox(sql, account.id, other.id)
    await sql`analyze outbox`
    const [middle] = await sql<{ id: number }[]>`
      select id from outbox where account_id = ${account.id} order by id desc offset 5000 limit 1`
    const [newest] = await sql<
      { id: number }[]
    >`select max(id)::int as id from outbox where account_id = ${account.id}`
    const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10)

    const { token } = await startSession(sql, account.id)
    const web = createWebApp(services)
    const cases: [string, string][] = [
      ['newest page', '/dashboard/outbox'],
      ['page 100 records deep (keyset)', `/dashboard/outbox?before=${middle?.id}`],
      ['status = failed', '/dashboard/outbox?status=failed'],
      ['status = queued', '/dashboard/outbox?status=queued'],
      ['one connection', `/dashboard/outbox?connection=${connections[1]?.id}`],
      ['one batch', `/dashboard/outbox?batch=${batch?.id}`],
      ['date range (3 days)', `/dashboard/outbox?from=${day(20)}&to=${day(18)}`],
      ['search a recipient', '/dashboard/outbox?q=customer4711%40'],
      ['search a subject word', '/dashboard/outbox?q=reset'],
      ['search matching nothing', '/dashboard/outbox?q=no-such-thing'],
      ['failed + search + range', `/dashboard/outbox?status=failed&q=digest&from=${day(25)}`],
      ['one record', `/dashboard/outbox/${newest?.id}`],
    ]
    console.log(
      `Dashboard outbox, ${RECORDS} records of the account (+${RECORDS} of another), ${RUNS} runs each`,
    )
    console.log(
      `${'case'.padEnd(34)} ${'median ms'.padStart(10)} ${'p95 ms'.padStart(8)} ${'max ms'.padStart(8)}`,
    )
    for (const [name, url] of cases) {
      const times = await timesOf(web, token, url)
      times.sort((a, b) => a - b)
      const at = (q: number) =>
        (times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0).toFixed(1)
      console.log(`${name.padEnd(34)} ${at(0.5).padStart(10)} ${at(0.95).padStart(8)} ${at(1).padStart(8)}`)
    }
  } finally {
    await services.close()
    await rm(dir, { recursive: true, force: true })
  }
}

/** Seeds RECORDS outbox records for each account straight into the tables: what is measured is reading. */
async function seedOutbox(sql: Sql, accountId: number, otherId: number) {
  const connections = await sql<{ id: number }[]>`
    insert into connections (account_id, from_address, host, port, username, password_encrypted, is_default)
    select ${accountId}, 'sender' || n || '@example.com', 'smtp.example.com', 587, 'u', 'x', n = 1
    from generate_series(1, 3) as n returning id`
  const [batch] = await sql<{ id: number }[]>`
    insert into batches (account_id, name, total_count) values (${accountId}, 'Newsletter', 2000) returning id`
  for (const [owner, count] of [
    [accountId, RECORDS],
    [otherId, RECORDS],
  ] as const) {
    await sql`
      insert into outbox (account_id, connection_id, status, from_address, to_addresses, subject, message_id,
                          batch_id, error, attempts, created_at, sent_at)
      select ${owner}, ${owner === accountId ? sql`(${connections.map((c) => c.id)}::int[])[1 + n % 3]` : null}::int,
        (array['sent', 'sent', 'sent', 'sent', 'sent', 'sent', 'sent', 'failed', 'queued', 'sent'])[1 + n % 10],
        'sender@example.com', array['customer' || n || '@example' || (n % 50) || '.com'],
        (array['Your receipt', 'Welcome aboard', 'Password reset', 'Weekly digest', 'Invoice'])[1 + n % 5] || ' #' || n,
        '<' || n || '@example.com>',
        case when n % 5 = 0 then ${owner === accountId ? (batch?.id ?? null) : null}::int end,
        case when n % 10 = 7 then '550 5.1.1 User unknown' end, 1,
        now() - (${count} - n) * interval '4 minutes', now() - (${count} - n) * interval '4 minutes'
      from generate_series(1, ${count}) as n`
  }
  return { connections, batch }
}

/** The times of RUNS requests of `url` as the session of `token`, after two that warm up. */
async function timesOf(web: ReturnType<typeof createWebApp>, token: string, url: string): Promise<number[]> {
  const times: number[] = []
  for (let run = 0; run < RUNS + 2; run++) {
    const started = performance.now()
    const res = await web.request(url, { headers: { cookie: `mailroom_session=${token}` } })
    await res.text()
    if (res.status !== 200) throw new Error(`${url}: ${res.status}`)
    // The first two warm the caches (PostgreSQL's plans, Node's JIT).
    if (run >= 2) times.push(performance.now() - started)
  }
  return times
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  },
)
