/**
 * outbox_tags, the index of each tag of each record that a tag's page walks, holds exactly
 * what the records' tags say, whichever way a record is written, retagged or deleted, and the
 * migration that makes it fills it from the records written before it.
 */
import { describe, expect, it } from 'vitest'
import { migrateDatabase } from '../../src/db/migrate.ts'
import { createLogger } from '../../src/log.ts'
import { purgeExpired } from '../../src/sending/retention.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import { createdBatch, waitForBatchEnd } from '../support/batches.ts'
import { email, enqueued } from '../support/queue.ts'
import { postSend, type Sender, setDailyUsed, startSender } from '../support/sending.ts'
import { crlf, submitted } from '../support/submissions.ts'

const app = useTestApp()

type Tag = { name: string; value: string }
type Row = [accountId: number, name: string, value: string, outboxId: number]

const tag = (name: string, value: string): Tag => ({ name, value })

/** What outbox_tags holds for `accountIds`, in its key's order. */
async function indexed(accountIds: number[]): Promise<Row[]> {
  const rows = await app.services.sql<
    { account_id: number; name: string; value: string; outbox_id: number }[]
  >`
    select account_id, name, value, outbox_id from outbox_tags
    where account_id = any(${accountIds}) order by account_id, name, value, outbox_id`
  return rows.map((r) => [r.account_id, r.name, r.value, r.outbox_id])
}

/** What the records' own tags say outbox_tags should hold for `accountIds`. */
async function expected(accountIds: number[]): Promise<Row[]> {
  const rows = await app.services.sql<
    { account_id: number; name: string; value: string; outbox_id: number }[]
  >`
    select o.account_id, t ->> 'name' as name, t ->> 'value' as value, o.id as outbox_id
    from outbox o cross join jsonb_array_elements(o.tags) t
    where o.account_id = any(${accountIds}) order by 1, 2, 3, 4`
  return rows.map((r) => [r.account_id, r.name, r.value, r.outbox_id])
}

/** outbox_tags agrees with the records' tags, and holds `count` rows for the accounts. */
async function expectInStep(accountIds: number[], count: number): Promise<void> {
  const rows = await indexed(accountIds)
  expect(rows).toEqual(await expected(accountIds))
  expect(rows).toHaveLength(count)
}

async function sent(s: Sender, tags: Tag[]): Promise<number> {
  const reply = await postSend(app, s.key, email({ tags }))
  expect(reply.status, JSON.stringify(reply.body)).toBe(200)
  return reply.body.outboxId as number
}

/** A record of the account written directly, `ageDays` old, sent. */
async function stored(accountId: number, tags: Tag[], ageDays = 0): Promise<number> {
  const [row] = await app.services.sql<{ id: number }[]>`
    insert into outbox (account_id, status, from_address, to_addresses, subject, message_id, tags, created_at)
    values (${accountId}, 'sent', 'a@example.com', '{b@example.com}', 's', '<m@example.com>',
            ${app.services.sql.json(tags)}, now() - make_interval(days => ${ageDays}))
    returning id`
  if (!row) throw new Error('no outbox record inserted')
  return row.id
}

describe('outbox_tags', () => {
  it('holds the tags of mail by /send, /enqueue, a batch and an SMTP submission, each account apart', async () => {
    await app.worker()
    const s = await startSender(app, 'tags-index', { plan: 'pro' })
    const other = await startSender(app, 'tags-index-other', { plan: 'pro' })
    await sent(s, [tag('campaign', 'spring'), tag('env', 'prod')])
    await sent(s, [])
    await enqueued(app, s.key, email({ tags: [tag('campaign', 'spring')] }))
    await enqueued(app, other.key, email({ tags: [tag('campaign', 'spring')] }))
    const emails = ['a', 'b', 'c'].map((to) => ({ to: `${to}@example.com`, subject: 'Hi', text_body: 'x' }))
    const batch = await createdBatch(app, s.key, { emails, tags: [tag('campaign', 'batch')] })
    expect((await waitForBatchEnd(app, s.key, batch)).status).toBe('completed')
    const message = crlf(
      'To: ada@example.com',
      'Subject: Tagged',
      'X-Mailroom-Tags: tier=gold',
      '',
      'Body',
      '',
    )
    await submitted(app, s, message, { recipients: ['ada@example.com'] })
    await expectInStep([s.accountId, other.accountId], 2 + 1 + 1 + 3 + 1)
  })

  it('follows tags set on a record, and holds nothing of a /send refused by a limit', async () => {
    const s = await startSender(app, 'tags-retag')
    const id = await sent(s, [tag('a', '1'), tag('b', '2')])
    await setDailyUsed(app, s.accountId, 100)
    expect((await postSend(app, s.key, email({ tags: [tag('c', '3')] }))).status).toBe(429)
    await expectInStep([s.accountId], 2)
    await app.services
      .sql`update outbox set tags = ${app.services.sql.json([tag('b', '3'), tag('c', '4'), tag('d', '5')])} where id = ${id}`
    await expectInStep([s.accountId], 3)
    await app.services.sql`update outbox set tags = '[]' where id = ${id}`
    await expectInStep([s.accountId], 0)
  })

  it("drops the purged records' rows and a deleted account's", async () => {
    const free = (await seedAccount(app, { plan: 'free' })).account.id
    const pro = (await seedAccount(app, { plan: 'pro' })).account.id
    const expired = [
      await stored(free, [tag('a', '1'), tag('b', '1')], 8),
      await stored(free, [tag('a', '1')], 9),
    ]
    await stored(free, [tag('a', '1')], 1)
    await stored(pro, [tag('a', '1'), tag('c', '2')], 8)
    await expectInStep([free, pro], 6)

    await purgeExpired(app.services.sql)
    await expectInStep([free, pro], 3)
    expect((await indexed([free])).map((row) => row[3])).not.toContain(expired[0])

    await app.services.sql`delete from accounts where id = ${pro}`
    expect(await indexed([pro])).toEqual([])
    await expectInStep([free], 1)
  })

  it('is filled by its migration from the records written before it, in place of the GIN index', async () => {
    const { account } = await seedAccount(app, { plan: 'pro' })
    await stored(account.id, [tag('campaign', 'spring'), tag('env', 'prod')])
    await stored(account.id, [])
    // As the database was before: the tags in the records alone, their GIN index beside them.
    await app.services.sql.unsafe(`
      drop trigger mailroom_outbox_tags_added on outbox;
      drop trigger mailroom_outbox_tags_removed on outbox;
      drop trigger mailroom_outbox_tags_changed on outbox;
      drop table outbox_tags;
      create index outbox_tags on outbox using gin (tags jsonb_path_ops) where tags <> '[]';
      delete from mailroom_migrations where name = '033_outbox_tags.sql';`)
    await stored(account.id, [tag('campaign', 'autumn')])

    expect(await migrateDatabase(app.db.sql, app.db.url, createLogger('silent'))).toEqual([
      '033_outbox_tags.sql',
    ])
    await expectInStep([account.id], 3)
    const [gin] = await app.services.sql`select 1 from pg_indexes where indexname = 'outbox_tags'`
    expect(gin).toBeUndefined()
    await stored(account.id, [tag('campaign', 'winter')])
    await expectInStep([account.id], 4)
  })
})
