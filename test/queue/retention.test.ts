/**
 * Contract test for retention and queued mail (docs/decisions.md, "Delivery guarantees"):
 * the purge removes outbox records past the plan's retention (Free 7 days, Pro 90 days), but
 * never mail that is still waiting to be sent or being sent, however old: every accepted email
 * is delivered or ends failed with a reason, none is lost.
 */
import { describe, expect, it } from 'vitest'
import { purgeOutboxChunk } from '../../src/db/outbox-records.ts'
import { PLAN_LIMITS } from '../../src/plans.ts'
import { purgeExpired } from '../../src/sending/retention.ts'
import { seedAccount, useTestApp } from '../support/app.ts'

const app = useTestApp()

type Status = 'queued' | 'sending' | 'sent' | 'failed'

/** An outbox record of the account, created `ageDays` ago, in `status`. */
async function record(accountId: number, ageDays: number, status: Status): Promise<number> {
  const [row] = await app.services.sql<{ id: number }[]>`
    insert into outbox (account_id, status, from_address, to_addresses, subject, message_id, text_body,
                        next_attempt_at, created_at)
    values (${accountId}, ${status}, 'a@example.com', '{b@example.com}', 's', '<m@example.com>', 'body',
            ${status === 'queued' ? app.services.sql`now()` : null}, now() - make_interval(days => ${ageDays}))
    returning id`
  if (!row) throw new Error('no outbox record inserted')
  return row.id
}

async function remaining(ids: number[]): Promise<number[]> {
  const rows = await app.services.sql<
    { id: number }[]
  >`select id from outbox where id = any(${ids}) order by id`
  return rows.map((r) => r.id)
}

describe('the retention purge and queued mail', () => {
  it('drops Free records past 7 days and Pro past 90, keeps younger ones, never queued or sending mail', async () => {
    const free = (await seedAccount(app, { plan: 'free' })).account.id
    const pro = (await seedAccount(app, { plan: 'pro' })).account.id
    const gone = [
      await record(free, 8, 'sent'),
      await record(free, 8, 'failed'),
      await record(pro, 91, 'sent'),
      await record(pro, 91, 'failed'),
    ]
    const kept = [
      await record(free, 6, 'sent'),
      await record(pro, 89, 'failed'),
      // Queued mail is still to be delivered: an old one (a Free account that was downgraded, a
      // connection held for months) is not a log entry yet.
      await record(free, 100, 'queued'),
      await record(pro, 100, 'queued'),
      await record(free, 100, 'sending'),
      await record(pro, 100, 'sending'),
    ]

    await purgeExpired(app.services.sql)

    expect(await remaining([...gone, ...kept])).toEqual(kept)
  })

  it('purges in chunks: each statement takes at most its chunk, and chunk by chunk every expired record goes and no other', async () => {
    const free = (await seedAccount(app, { plan: 'free' })).account.id
    const pro = (await seedAccount(app, { plan: 'pro' })).account.id
    const gone = [
      ...(await Promise.all([8, 9, 10, 11, 12].map((days) => record(free, days, 'sent')))),
      await record(pro, 91, 'failed'),
      await record(pro, 120, 'sent'),
    ]
    const kept = [
      await record(free, 6, 'sent'),
      await record(pro, 89, 'sent'),
      await record(free, 30, 'queued'),
    ]
    const retention = { free: PLAN_LIMITS.free.retentionDays, pro: PLAN_LIMITS.pro.retentionDays }

    const taken = [await purgeOutboxChunk(app.services.sql, retention, 3)]
    expect(taken).toEqual([3])
    expect((await remaining(gone)).length).toBe(gone.length - 3)
    while ((taken.at(-1) ?? 0) > 0) taken.push(await purgeOutboxChunk(app.services.sql, retention, 3))

    expect(taken).toEqual([3, 3, 1, 0])
    expect(await remaining([...gone, ...kept])).toEqual(kept)
  })

  it('a purge with a small chunk leaves what a purge in one statement would', async () => {
    const free = (await seedAccount(app, { plan: 'free' })).account.id
    const gone = await Promise.all(Array.from({ length: 7 }, (_, i) => record(free, 8 + i, 'failed')))
    const kept = [await record(free, 1, 'sent'), await record(free, 40, 'sending')]

    const purged = await purgeExpired(app.services.sql, { chunk: 2, rest: 0 })

    expect(purged.outbox).toBe(gone.length)
    expect(await remaining([...gone, ...kept])).toEqual(kept)
  })
})
