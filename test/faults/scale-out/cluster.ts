/**
 * The scale-out scenario's cluster: two API processes and two worker processes of `mailroom start`
 * on the test database, connections paced and limited, a database clock that reaches the top of
 * an hour during the run, and triggers that log every pacing token taken and every claim.
 */
import { addConnection } from '../../../src/connections/connections.ts'
import { createForm } from '../../../src/forms/forms.ts'
import { freePort } from '../../../src/net/free-port.ts'
import { type SeededAccount, seedAccount, type TestApp } from '../../support/app.ts'
import {
  type MailroomProcess,
  mailroomEnv,
  spawnMailroom,
  waitFor,
  waitHealthy,
} from '../../support/queue.ts'
import type { SmtpSink } from '../../support/smtp-sink.ts'

export const HOUR = 3_600_000
export const DAY = 24 * HOUR
/** From the moment the clock is set until the database's clock reaches the top of the hour. */
export const LEAD_MS = 40_000
export const FREE_DAILY_LIMIT = 100

export interface Paced {
  sink: SmtpSink
  connectionId: number
  from: string
  quota: number
  rate: number
}

/** A connection of `accountId` to a sink of its own, with an hourly quota and a rate. */
async function pacedConnection(
  app: TestApp,
  accountId: number,
  from: string,
  settings: { quota?: number; rate: number },
): Promise<Paced> {
  const sink = await app.sink({ port: 2525 })
  const connection = await addConnection(app.services, {
    accountId,
    ...sink.login,
    from,
    rate: settings.rate,
    ...(settings.quota ? { quota: { quota: settings.quota, per: 'hour' as const } } : {}),
  })
  return { sink, connectionId: connection.id, from, quota: settings.quota ?? 0, rate: settings.rate }
}

/**
 * Logs, by triggers in the same transactions (a take or a claim rolled back is not logged either),
 * every unit of pacing taken (a row of connection_pacing inserted or updated: one token each) and
 * every claim of queued mail by a worker process. The log is the test's, on its own database.
 */
async function observe(app: TestApp): Promise<void> {
  await app.services.sql.unsafe(`
    create table scale_out_takes (
      connection_id integer not null,
      refilled_at timestamptz not null,
      tokens float8 not null,
      before_tokens float8,
      before_refilled_at timestamptz,
      logged_at timestamptz not null default clock_timestamp()
    );
    create function scale_out_log_take() returns trigger language plpgsql as $$
    begin
      insert into scale_out_takes (connection_id, refilled_at, tokens, before_tokens, before_refilled_at)
      values (new.connection_id, new.refilled_at, new.tokens,
        case when tg_op = 'UPDATE' then old.tokens end, case when tg_op = 'UPDATE' then old.refilled_at end);
      return null;
    end $$;
    create trigger scale_out_log_take after insert or update on connection_pacing
      for each row execute function scale_out_log_take();
    create table scale_out_claims (outbox_id integer not null, claimed_by text not null);
    create function scale_out_log_claim() returns trigger language plpgsql as $$
    begin
      insert into scale_out_claims values (new.id, new.claimed_by);
      return null;
    end $$;
    create trigger scale_out_log_claim after update of claimed_by on outbox
      for each row when (new.claimed_by is not null) execute function scale_out_log_claim();`)
}

/**
 * Runs mailroom_now() ahead of real time for every new session of the test database (the spawned
 * processes' too), so that it reaches the top of an hour `LEAD_MS` from now. Returns the offset.
 */
async function clockBeforeTopOfHour(app: TestApp): Promise<{ offsetMs: number; topOfHour: number }> {
  const boundary = Date.now() + LEAD_MS
  const topOfHour = Math.ceil(boundary / HOUR) * HOUR
  const offsetMs = topOfHour - boundary
  const name = new URL(app.db.url).pathname.slice(1)
  await app.services.sql.unsafe(`alter database ${name} set mailroom.clock_offset_ms = '${offsetMs}'`)
  return { offsetMs, topOfHour }
}

async function startApi(app: TestApp, processes: MailroomProcess[]): Promise<string> {
  const port = await freePort()
  const child = spawnMailroom(
    ['start', '--no-worker'],
    mailroomEnv(app.db.url, { PORT: String(port), HOST: '127.0.0.1', MAILROOM_TRUST_PROXY: 'true' }),
  )
  processes.push(child)
  const url = `http://127.0.0.1:${port}`
  await waitHealthy(child, url)
  return url
}

/** The accounts, connections and form of the scenario, and the processes started on them. */
export interface Cluster {
  app: TestApp
  processes: MailroomProcess[]
  pro: SeededAccount
  free: SeededAccount
  p1: Paced
  p2: Paced
  f: Paced
  form: { public_id: string }
  offsetMs: number
  topOfHour: number
  /** The two API processes' URLs. */
  apis: string[]
}

/** Starts the cluster; its processes join `processes`, which the caller stops. */
export async function startCluster(app: TestApp, processes: MailroomProcess[]): Promise<Cluster> {
  await observe(app)
  // The Pro account: a default connection and a second one, both with small quotas and rates.
  const pro = await seedAccount(app, { plan: 'pro' })
  const p1 = await pacedConnection(app, pro.account.id, 'scale-one@example.com', { quota: 30, rate: 120 })
  const p2 = await pacedConnection(app, pro.account.id, 'scale-two@example.com', { quota: 20, rate: 60 })
  // The Free account: no quota, a rate whose bucket holds more than the daily limit.
  const free = await seedAccount(app, { plan: 'free' })
  const f = await pacedConnection(app, free.account.id, 'scale-free@example.com', { rate: 6_000 })
  const form = await createForm(
    app.services.sql,
    pro.account.id,
    { name: 'Scale-out contact', connectionId: p2.connectionId },
    'http://localhost',
  )

  const { offsetMs, topOfHour } = await clockBeforeTopOfHour(app)
  for (let n = 0; n < 2; n++)
    processes.push(spawnMailroom(['start', '--worker-only'], mailroomEnv(app.db.url)))
  const apis = await Promise.all([startApi(app, processes), startApi(app, processes)])
  // Both worker processes take jobs before any mail is due: one still starting while the other
  // drains the queues in rounds would leave it nothing to take part in.
  await waitFor(
    'both worker processes taking jobs',
    async () => {
      const [row] = await app.services.sql<{ n: number }[]>`
        select count(*)::int as n from worker_processes where cardinality(job_worker_ids) > 0`
      return (row?.n ?? 0) >= 2 ? true : undefined
    },
    60_000,
    200,
  )
  return { app, processes, pro, free, p1, p2, f, form, offsetMs, topOfHour, apis }
}

/** How many worker processes have claimed queued mail so far. */
export async function claimants(app: TestApp): Promise<number> {
  const [row] = await app.services.sql<{ n: number }[]>`
    select count(distinct claimed_by)::int as n from scale_out_claims`
  return row?.n ?? 0
}
