/**
 * The load of the scale rows on an installation of many tenants (./installation.ts): transactional
 * mail at a steady rate spread over many tenants, each email timed from its request until it
 * reached the sink; batches started at once, timed until their last recipient arrived; and each
 * connection's deliveries counted over a window.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { SmtpSink } from '../../test/support/smtp-sink.ts'
import { addresses, type Bench, percentile } from '../support.ts'
import { type Installation, openInstallation, type Tenant } from './installation.ts'

/** Tenants of the installation, and of them those that start a batch (BENCH_TENANTS, BENCH_TENANT_BATCHERS). */
export const TENANTS = Number(process.env.BENCH_TENANTS ?? 200)
export const BATCHERS = Number(process.env.BENCH_TENANT_BATCHERS ?? 10)
/** Each batching tenant's audience (BENCH_TENANT_AUDIENCE; a 2-core machine runs 10 × 100,000 for about half an hour). */
export const MEMBERS = Number(process.env.BENCH_TENANT_AUDIENCE ?? 100_000)

const TRANSACTIONAL = 'Transactional '
const BATCH_SUBJECT = 'Batch for {{first_name}}'

/**
 * Reads what the sink received, message by message, and lets it go (a run of a million messages
 * would otherwise be held whole): the transactional ones' latencies, and every message counted by
 * the address it came from.
 */
export class SinkWatch {
  readonly #sink: SmtpSink
  readonly #sentAt = new Map<string, number>()
  readonly #timer: NodeJS.Timeout
  latencies: number[] = []
  byFrom = new Map<string, number>()
  batchMessages = 0

  constructor(sink: SmtpSink) {
    this.#sink = sink
    this.#timer = setInterval(() => this.#read(), 20)
  }

  /** A transactional email was requested now, under `subject`. */
  requested(subject: string, at: number): void {
    this.#sentAt.set(subject, at)
  }

  get transactionalWaiting(): number {
    return this.#sentAt.size
  }

  #read(): void {
    for (const message of this.#sink.messages.splice(0)) {
      const subject = message.headers.get('subject') ?? ''
      const from = message.envelope.from
      this.byFrom.set(from, (this.byFrom.get(from) ?? 0) + 1)
      const sentAt = this.#sentAt.get(subject)
      if (sentAt !== undefined) {
        this.latencies.push(message.receivedAt.getTime() - sentAt)
        this.#sentAt.delete(subject)
      } else if (!subject.startsWith(TRANSACTIONAL)) {
        this.batchMessages++
      }
    }
  }

  /** Resolves once `done()` holds, looking every 20 ms; throws after `timeoutMs`. */
  async until(what: string, done: () => boolean, timeoutMs = 3_600_000): Promise<void> {
    const deadline = performance.now() + timeoutMs
    while (!done()) {
      if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await sleep(20)
    }
  }

  /** Starts the counts anew. */
  reset(): void {
    this.#read()
    this.latencies = []
    this.byFrom = new Map()
    this.batchMessages = 0
  }

  close(): void {
    clearInterval(this.#timer)
  }
}

let transactionalSeq = 0

/**
 * `/enqueue`s at `perSecond` in total, tenant after tenant, until `stop` resolves, then waits for
 * the last of them at the sink. Resolves to how many were sent; `watch.latencies` has their times.
 */
export async function transactional(
  watch: SinkWatch,
  tenants: Tenant[],
  perSecond: number,
  stop: Promise<unknown>,
): Promise<number> {
  let stopped = false
  stop.then(() => {
    stopped = true
  })
  const requests: Promise<unknown>[] = []
  const started = performance.now()
  for (let i = 0; !stopped; i++) {
    const tenant = tenants[i % tenants.length] as Tenant
    const subject = `${TRANSACTIONAL}${++transactionalSeq}`
    watch.requested(subject, Date.now())
    requests.push(
      tenant.post('/enqueue', { to: `t${i}@example.com`, subject, text_body: 'Your code: 123456' }),
    )
    // Each request on its own time, whatever the ones before took: a slow service shows as latency.
    const due = started + ((i + 1) * 1000) / perSecond
    await sleep(Math.max(0, due - performance.now()))
  }
  await Promise.all(requests)
  await watch.until('the transactional mail at the sink', () => watch.transactionalWaiting === 0)
  return requests.length
}

/** An audience of `members` for the tenant, filled in SQL (an import is a row of its own). */
export async function seedAudience(
  installation: Installation,
  tenant: Tenant,
  members: number,
): Promise<number> {
  const { audience } = (await tenant.post('/audiences', { name: 'Newsletter' })) as {
    audience: { id: number }
  }
  await installation.services.sql`
    insert into audience_members (audience_id, email, payload)
    select ${audience.id}, 'member' || i || '@example.com', jsonb_build_object('first_name', 'M' || i)
    from generate_series(1, ${members}::int) as i`
  return audience.id
}

const template = { subject: BATCH_SUBJECT, text_body: 'Hello {{first_name}}, this month at the bench' }

/** A batch from the tenant's first connection to its audience. */
export function audienceBatch(tenant: Tenant, audienceId: number): Promise<unknown> {
  return tenant.post('/send/batch', { from: tenant.connections[0]?.from, template, audience_id: audienceId })
}

/** A batch of `count` listed recipients from one of the tenant's connections. */
export function listedBatch(tenant: Tenant, from: string, count: number): Promise<unknown> {
  return tenant.post('/send/batch', {
    from,
    template,
    recipients: addresses(count, `${from.split('@')[0]}-`),
  })
}

/** p50, p99 and max of the latencies, for a note. */
export function latencySummary(latencies: number[]): { p50: number; p99: number; max: number } {
  const sorted = [...latencies].sort((a, b) => a - b)
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? 0 }
}

/** The installation of the tenant scenarios, its tenants split into those that batch and the rest. */
export interface TenantLoad {
  installation: Installation
  watch: SinkWatch
  /** The first BATCHERS tenants, each with an audience of MEMBERS (`audiences`, in the same order). */
  batchers: Tenant[]
  audiences: number[]
  /** The other tenants, which send transactional mail. */
  senders: Tenant[]
}

/**
 * Runs `run` on an installation of TENANTS tenants (`name` as ./installation.ts names it), whose
 * batchers have their audiences seeded, and closes it afterwards whatever happened.
 */
export async function withTenantLoad<T>(
  bench: Bench,
  name: string,
  run: (load: TenantLoad) => Promise<T>,
): Promise<T> {
  const installation = await openInstallation(bench, name, TENANTS)
  const watch = new SinkWatch(bench.sink)
  try {
    const batchers = installation.tenants.slice(0, BATCHERS)
    const senders = installation.tenants.slice(BATCHERS)
    const audiences = await Promise.all(batchers.map((t) => seedAudience(installation, t, MEMBERS)))
    return await run({ installation, watch, batchers, audiences, senders })
  } finally {
    watch.close()
    await installation.close()
  }
}
