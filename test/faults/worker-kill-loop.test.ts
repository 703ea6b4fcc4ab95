/**
 * A worker process killed with SIGKILL at random moments, again and again
 * (docs/decisions.md, "Delivery guarantees"). The real `mailroom start --worker-only` is started, killed
 * 0.3 to 1.5 s after it starts handing mail to the SMTP server (seeded, so a failure can be run
 * again), and started again, five times; a last one is left running. Every queued message must
 * arrive, every record end `sent`, and a message may arrive twice only if it was in flight when a
 * worker was killed (its outcome unknown), and then with the same Message-ID.
 *
 * Each worker gets a fresh batch of mail on a connection of its own: a connection whose queue run
 * a killed worker held waits until that process is taken for dead (30 s of silence), so new work
 * is what lets every kill land in the middle of sending. The last worker runs on a clock ahead by
 * that silence and a heartbeat, so that it takes every killed one for dead at once.
 */
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import {
  email,
  enqueued,
  type MailroomProcess,
  mailroomEnv,
  spawnMailroom,
  urlOnceDead,
  waitFor,
} from '../support/queue.ts'
import { type Sender, startSender } from '../support/sending.ts'

const app = useTestApp()
let worker: MailroomProcess | undefined

afterAll(async () => {
  await worker?.stop()
})

const SEED = 16_002
const KILLS = 5
const PER_WORKER = 25

/** mulberry32: a small seeded generator, so the kill moments of a failed run can be had again. */
function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

function startWorkerProcess(databaseUrl = app.db.url): MailroomProcess {
  return spawnMailroom(['start', '--worker-only'], mailroomEnv(databaseUrl))
}

/** Outbox records of `senders` the process `pid` held in flight (claimants are `host/pid/random`). */
async function heldBy(senders: Sender[], pid: number): Promise<number[]> {
  const rows = await app.services.sql<{ id: number }[]>`
    select id from outbox where status = 'sending' and claimed_by like ${`%/${pid}/%`}
    and account_id in ${app.services.sql(senders.map((s) => s.accountId))}`
  return rows.map((r) => r.id)
}

/** PER_WORKER messages for the sender of `round`, enqueued five at a time. */
async function enqueueRound(s: Sender, round: number): Promise<void> {
  for (let i = 0; i < PER_WORKER; i += 5) {
    await Promise.all(
      Array.from({ length: 5 }, (_, j) =>
        enqueued(
          app,
          s.key,
          email({ to: `r${round}-${i + j}@example.com`, subject: `kill loop ${round}/${i + j}` }),
        ),
      ),
    )
  }
}

describe('SIGKILL at random moments, five times in a row', () => {
  it('every queued message is delivered; a second copy only of one in flight at a kill, with the same Message-ID', {
    timeout: 240_000,
  }, async () => {
    const random = seeded(SEED)
    const senders: Sender[] = []
    // Outcome unknown: held in flight by a worker when it died, by outbox id, with how many times.
    const unknown = new Map<number, number>()
    const kills: string[] = []

    for (let round = 0; round <= KILLS; round++) {
      // Paced (10 a second after a burst of 10) and slow to answer, so that a kill finds mail on
      // the wire and mail still queued.
      const s = await startSender(app, `kill${round}-`, {
        plan: 'pro',
        rate: 600,
        behaviour: { dataDelayMs: 100 },
      })
      senders.push(s)
      await enqueueRound(s, round)
      if (round === KILLS) {
        worker = startWorkerProcess(urlOnceDead(app.db.url))
        break
      }
      worker = startWorkerProcess()
      const current = worker
      await waitFor(
        () => `worker ${round} to send (output: ${current.output()})`,
        () => (s.sink.messages.length > 0 ? true : undefined),
        60_000,
        10,
      )
      const delayMs = 300 + Math.floor(random() * 1_200)
      await sleep(delayMs)
      const exited = once(current.child, 'exit')
      current.child.kill('SIGKILL')
      await exited
      const held = await heldBy(senders, current.child.pid as number)
      for (const id of held) unknown.set(id, (unknown.get(id) ?? 0) + 1)
      kills.push(`kill ${round + 1} after ${delayMs} ms: ${held.length} in flight`)
    }

    const total = senders.length * PER_WORKER
    const missing = async () => {
      const rows = await app.services.sql<{ n: number }[]>`
        select count(*)::int as n from outbox where status <> 'sent'
        and account_id in ${app.services.sql(senders.map((s) => s.accountId))}`
      return rows[0]?.n ?? total
    }
    // The killed workers' claims come back once each is taken for dead (by the last worker's
    // first sweep).
    await waitFor(
      async () => `every record sent; ${await missing()} not (seed ${SEED}; ${kills.join('; ')})`,
      async () => ((await missing()) === 0 ? true : undefined),
      120_000,
      250,
    )
    expect(worker?.exited(), worker?.output()).toBe(false)

    const records = await app.services.sql<{ id: number; subject: string; message_id: string }[]>`
      select id, subject, message_id from outbox
      where account_id in ${app.services.sql(senders.map((s) => s.accountId))}`
    expect(records).toHaveLength(total)
    const received = new Map<string, string[]>()
    for (const m of senders.flatMap((s) => s.sink.messages)) {
      const subject = m.headers.get('subject') as string
      received.set(subject, [...(received.get(subject) ?? []), m.headers.get('message-id') as string])
    }
    let duplicates = 0
    for (const record of records) {
      const ids = received.get(record.subject) ?? []
      expect(ids.length, `copies of "${record.subject}"`).toBeGreaterThanOrEqual(1)
      expect(new Set(ids), `Message-IDs of "${record.subject}"`).toEqual(new Set([record.message_id]))
      // One copy, plus at most one for each kill that found it in flight.
      expect(ids.length - 1, `extra copies of "${record.subject}" (${kills.join('; ')})`).toBeLessThanOrEqual(
        unknown.get(record.id) ?? 0,
      )
      duplicates += ids.length - 1
    }
    // Mail was on the wire at the kills: the test killed workers in the middle of sending.
    expect(unknown.size, kills.join('; ')).toBeGreaterThan(0)
    console.info(`kill loop (seed ${SEED}): ${kills.join('; ')}; ${duplicates} duplicates`)
  })
})
