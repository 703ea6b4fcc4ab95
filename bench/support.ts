/**
 * What every benchmark scenario runs on: the real service as a process of its own (so that its
 * memory can be read), one connection to a local TLS SMTP sink, an API key, and timing helpers.
 * Figures, not assertions: tests never time anything.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises'
import type { Services } from '../src/services.ts'
import type { SmtpSink } from '../test/support/smtp-sink.ts'
import type { FillFacts } from './fill/fill.ts'

export interface Figures {
  name: string
  /** Messages the run sent (or items it handled). */
  count: number
  seconds: number
  /** Per-request latencies in ms; empty for runs timed as a whole (queue, batches). */
  latencies: number[]
  /** The service's peak resident memory during the run, in MiB. */
  peakRssMiB?: number
  /** CPU milliseconds per message: the service, its PostgreSQL, this process (load and sink). */
  cpuMs?: { service: number; postgres: number; bench: number }
  /** Compared with the raw baseline (throughput, and p50 for request rows), or a p99 bound alone. */
  target?: { ratio: number; p50WithinMs?: number } | { p99UnderMs: number }
  /** The raw row this one is compared with, measured before and after its scenario; none for raw rows. */
  baseline?: Figures
  /** Figures of the row that fit no column, printed under the table. */
  note?: string
  /** One connection at full speed (/send, /enqueue, a batch): the load the RSS target is for. */
  fullSpeed?: true
  /** Requests spaced out by the bench: its rate is the bench's pace, so only latencies are printed. */
  paced?: true
}

export interface Bench {
  /** The service's root URL (the API is under /v1). */
  url: string
  key: string
  /** The address of the one connection every scenario sends through. */
  from: string
  sink: SmtpSink
  /** The bench's own handle on the service's database (for seeding). */
  services: Services
  accountId: number
  /** The filled outbox the service runs on (BENCH_SCALE above 0); none on an empty database. */
  fill?: FillFacts | undefined
  /** Requests in flight at once. */
  concurrency: number
  /** Messages per request-timed row. */
  messages: number
  /** The service's process id (for reading its memory under /proc). */
  servicePid: number
  /** POST to the API; throws on anything but a 2xx. Returns the parsed body. */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<unknown>
  /** Resolves once the sink has received `count` more messages than when it was called. */
  delivered(count: number): Promise<void>
  /** `messages` calls of `one`, `concurrency` at a time, after a warm-up; with latencies. */
  measure(name: string, one: (i: number) => Promise<unknown>): Promise<Figures>
  /** A run timed as a whole, from its first request until it resolves; after `warmUp`, if given. */
  timed(name: string, count: number, run: () => Promise<void>, warmUp?: () => Promise<void>): Promise<Figures>
}

/** One file of bench/scenarios: a name and what it measures. */
export interface Scenario {
  name: string
  /** Run only when BENCH_ONLY names it (the scale rows, which want a filled outbox). */
  onlyWhenNamed?: true
  run(bench: Bench): Promise<Figures[]>
}

export interface BenchOptions {
  concurrency: number
  messages: number
  /** The service's pid, whose peak memory and CPU each row reports. */
  servicePid: number
  /** The pid of the service's PostgreSQL (its postmaster), whose CPU each row reports. */
  postgresPid: () => Promise<number | undefined>
}

/** Requests made before each measured row. */
export const WARM_UP = Number(process.env.BENCH_WARM_UP ?? 1000)

export function makeBench(
  base: Omit<Bench, 'measure' | 'timed' | 'delivered' | 'concurrency' | 'messages' | 'servicePid'>,
  options: BenchOptions,
): Bench {
  const { concurrency, messages, servicePid } = options
  const rowed = async (
    run: () => Promise<Omit<Figures, 'peakRssMiB'>>,
    warmUp?: () => Promise<void>,
  ): Promise<Figures> => {
    await warmUp?.()
    await resetPeakRss(servicePid)
    const postgresPid = await options.postgresPid()
    const before = {
      service: await cpuMs(servicePid),
      postgres: await treeCpuMs(postgresPid),
      bench: ownCpuMs(),
    }
    const figures = await run()
    const per = (now: number, then: number) => (now - then) / figures.count
    return {
      ...figures,
      peakRssMiB: await peakRssMiB(servicePid),
      cpuMs: {
        service: per(await cpuMs(servicePid), before.service),
        postgres: per(await treeCpuMs(postgresPid), before.postgres),
        bench: per(ownCpuMs(), before.bench),
      },
    }
  }
  return {
    ...base,
    concurrency,
    messages,
    servicePid,
    delivered(count) {
      return base.sink.waitForMessages(base.sink.messages.length + count, 600_000).then(() => {})
    },
    measure: (name, one) =>
      rowed(
        async () => {
          const latencies: number[] = []
          let next = 0
          const started = performance.now()
          await Promise.all(
            Array.from({ length: concurrency }, async () => {
              while (next < messages) {
                const i = next++
                const t0 = performance.now()
                await one(i)
                latencies.push(performance.now() - t0)
              }
            }),
          )
          return { name, count: messages, seconds: (performance.now() - started) / 1000, latencies }
        },
        // Outside the figures (time, CPU and memory): connections, pools, prepared statements,
        // and enough requests for V8 to optimize the hot paths.
        async () => {
          let warm = 0
          await Promise.all(
            Array.from({ length: concurrency }, async () => {
              while (warm < WARM_UP) await one(1_000_000 + warm++)
            }),
          )
        },
      ),
    timed: (name, count, run, warmUp) =>
      rowed(async () => {
        const started = performance.now()
        await run()
        return { name, count, seconds: (performance.now() - started) / 1000, latencies: [] }
      }, warmUp),
  }
}

/** Linux keeps a process's peak resident set (VmHWM); writing 5 to clear_refs starts it anew. */
async function resetPeakRss(pid: number): Promise<void> {
  await writeFile(`/proc/${pid}/clear_refs`, '5').catch(() => {})
}

async function peakRssMiB(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')
  const kb = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]
  return kb === undefined ? undefined : Number(kb) / 1024
}

const TICK_MS = 10

/** CPU time a process used, its own and its reaped children's (utime, stime, cutime, cstime). */
async function cpuMs(pid: number | undefined): Promise<number> {
  if (pid === undefined) return 0
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i] ?? 0), 0) * TICK_MS
}

/** CPU time of a process and its live children (PostgreSQL's backends are the postmaster's). */
async function treeCpuMs(pid: number | undefined): Promise<number> {
  if (pid === undefined) return 0
  let total = await cpuMs(pid)
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '')
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    if (parent === pid) total += await cpuMs(Number(entry))
  }
  return total
}

function ownCpuMs(): number {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

/** The value below which `p` percent of `sorted` lie. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
}

export function addresses(n: number, tag: string): string[] {
  return Array.from({ length: n }, (_, i) => `${tag}${i}@example.com`)
}

/** A message of the benchmark, as the API takes it. */
export function message(i: number, from: string) {
  return { from, to: `r${i}@example.com`, subject: `Bench ${i}`, text_body: 'Hello from the bench' }
}
