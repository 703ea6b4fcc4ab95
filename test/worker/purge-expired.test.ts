import { describe, expect, it } from 'vitest'
import { BATCH_CONTENT_KEY } from '../../src/db/webhooks.ts'
import { PLAN_LIMITS } from '../../src/plans.ts'
import { purgeExpired } from '../../src/sending/retention.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import { DAY, HOUR, later } from '../support/clock.ts'

const app = useTestApp()

async function outboxRow(accountId: number, ageDays: number, status = 'sent'): Promise<number> {
  const [row] = await app.services.sql<{ id: number }[]>`
    insert into outbox (account_id, status, from_address, to_addresses, subject, message_id, created_at)
    values (${accountId}, ${status}, 'a@example.com', '{b@example.com}', 's', '<m@example.com>',
            now() - make_interval(days => ${ageDays}))
    returning id`
  return row?.id ?? 0
}

async function remaining(ids: number[]): Promise<number[]> {
  const rows = await app.services.sql<
    { id: number }[]
  >`select id from outbox where id = any(${ids}) order by id`
  return rows.map((r) => r.id)
}

describe('purge_expired keeps each plan’s email log retention', () => {
  it('drops Free records older than 7 days and Pro records older than 90, never one in flight', async () => {
    const free = await seedAccount(app, { plan: 'free' })
    const pro = await seedAccount(app, { plan: 'pro' })
    const freeOld = await outboxRow(free.account.id, 8)
    const freeKept = await outboxRow(free.account.id, 6)
    const freeSending = await outboxRow(free.account.id, 30, 'sending')
    const proOld = await outboxRow(pro.account.id, 91)
    const proKept = await outboxRow(pro.account.id, 89)

    const purged = await purgeExpired(app.services.sql)

    expect(purged.outbox).toBeGreaterThanOrEqual(2)
    expect(await remaining([freeOld, freeKept, freeSending, proOld, proKept])).toEqual([
      freeKept,
      freeSending,
      proKept,
    ])
  })

  it('drops a record once the service’s clock passes its plan’s days', async () => {
    const free = await seedAccount(app, { plan: 'free' })
    const pro = await seedAccount(app, { plan: 'pro' })
    const freeRecord = await outboxRow(free.account.id, 0)
    const proRecord = await outboxRow(pro.account.id, 0)

    await purgeExpired((await later(app, 6 * DAY)).services.sql)
    expect(await remaining([freeRecord, proRecord])).toEqual([freeRecord, proRecord])
    await purgeExpired((await later(app, 7 * DAY + HOUR)).services.sql)
    expect(await remaining([freeRecord, proRecord])).toEqual([proRecord])
  })

  it("takes each plan's retention from the plan table, not from whether the plan is free", async () => {
    const pro = await seedAccount(app, { plan: 'pro' })
    const proOld = await outboxRow(pro.account.id, 31)
    const proKept = await outboxRow(pro.account.id, 29)
    const saved = PLAN_LIMITS.pro.retentionDays
    PLAN_LIMITS.pro.retentionDays = 30
    try {
      await purgeExpired(app.services.sql)
    } finally {
      PLAN_LIMITS.pro.retentionDays = saved
    }
    expect(await remaining([proOld, proKept])).toEqual([proKept])
  })

  it('keeps a batch content while a waiting webhook delivery renders its event from it', async () => {
    const { account } = await seedAccount(app, { plan: 'pro' })
    const { sql } = app.services
    const contents = await sql<{ id: number }[]>`
      insert into batch_contents (account_id, subject) values (${account.id}, 'Named'), (${account.id}, 'Unnamed')
      returning id`
    const [named] = contents.map((c) => c.id)
    const [delivery] = await sql<{ id: number }[]>`
      with endpoint as (
        insert into webhook_endpoints (account_id, url, events, secret_sealed)
        values (${account.id}, 'https://hooks.example.com/in', '{email.sent}', 'sealed') returning id
      ), event as (
        insert into webhook_events (account_id, type, data)
        values (${account.id}, 'email.sent', ${sql.json({ [BATCH_CONTENT_KEY]: { id: named, payload: {} } })})
        returning id
      )
      insert into webhook_deliveries (endpoint_id, event_id) select endpoint.id, event.id from endpoint, event
      returning id`
    const kept = async () =>
      (
        await sql<
          { id: number }[]
        >`select id from batch_contents where id = any(${contents.map((c) => c.id)})`
      ).map((c) => c.id)

    await purgeExpired(sql)
    expect(await kept()).toEqual([named])
    await sql`update webhook_deliveries set status = 'sending' where id = ${delivery?.id ?? 0}`
    await purgeExpired(sql)
    expect(await kept()).toEqual([named])
    await sql`update webhook_deliveries set status = 'failed' where id = ${delivery?.id ?? 0}`
    await purgeExpired(sql)
    expect(await kept()).toEqual([])
  })

  it('drops usage counters no give-back can reach any more, and keeps current ones', async () => {
    const { account } = await seedAccount(app, { plan: 'free' })
    const { sql } = app.services
    await sql`insert into daily_usage (account_id, day, used) values
      (${account.id}, (now() at time zone 'UTC')::date - 3, 5),
      (${account.id}, (now() at time zone 'UTC')::date, 2)`

    await purgeExpired(sql)

    const days = await sql<{ used: number }[]>`select used from daily_usage where account_id = ${account.id}`
    expect(days.map((d) => d.used)).toEqual([2])
  })
})
