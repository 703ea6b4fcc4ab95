/**
 * GET /emails?tag= pages through the same emails, in the same order, as the list without the tag
 * filter keeps of those carrying every tag asked for, whatever else filters it (status, batch,
 * date range) and wherever the cursor stands; another account's emails with the same tags never
 * show.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../../support/app.ts'
import { createdBatch } from '../../support/batches.ts'
import { type Sender, startSender } from '../../support/sending.ts'

const app = useTestApp()

type Tag = { name: string; value: string }
type Listed = { id: number; tags: Tag[] }

const X: Tag = { name: 'campaign', value: 'x' }
const P: Tag = { name: 'env', value: 'prod' }
const Y: Tag = { name: 'campaign', value: 'y' }
/** The tags of the records, in turn: the asked-for tags alone, together, beside others, or none. */
const TAGGINGS: Tag[][] = [[X], [X, P], [P], [], [Y, P], [P, X], [X], [Y]]
const STATUSES = ['sent', 'failed', 'sent']

let mine: Sender
let theirs: Sender
let batchId: number

const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10)

/** 48 records of `s`, their times out of their ids' order, one in three in the batch. */
async function fill(s: Sender, batch: number | null): Promise<void> {
  for (let i = 0; i < 48; i++) {
    const daysAgo = (i * 7) % 30
    await app.services.sql`
      insert into outbox (account_id, status, from_address, to_addresses, subject, message_id, tags,
                          batch_id, created_at)
      values (${s.accountId}, ${STATUSES[i % 3] ?? 'sent'}, ${s.from}, '{b@example.com}', ${`Record ${i}`},
              ${`<r${i}@example.com>`}, ${app.services.sql.json(TAGGINGS[i % TAGGINGS.length] ?? [])},
              ${i % 3 === 1 ? batch : null}, now() - make_interval(days => ${daysAgo}, mins => ${i}))`
  }
}

/** Every page of the list for `query`, `limit` at a time, following the cursor. */
async function walk(query: URLSearchParams, limit: number): Promise<Listed[]> {
  const listed: Listed[] = []
  let cursor: string | null = null
  do {
    const params = new URLSearchParams(query)
    params.set('limit', String(limit))
    if (cursor) params.set('cursor', cursor)
    const res = await app.request(`/emails?${params}`, { key: mine.key })
    const body = (await res.json()) as { emails: Listed[]; pagination: { nextCursor: string | null } }
    expect(res.status, JSON.stringify(body)).toBe(200)
    listed.push(...body.emails)
    cursor = body.pagination.nextCursor
  } while (cursor)
  return listed
}

const carries = (tags: Tag[], wanted: Tag[]) =>
  wanted.every((w) => tags.some((t) => t.name === w.name && t.value === w.value))

beforeAll(async () => {
  mine = await startSender(app, 'tag-pages', { plan: 'pro' })
  theirs = await startSender(app, 'tag-pages-theirs', { plan: 'pro' })
  batchId = await createdBatch(app, mine.key, {
    emails: [{ to: 'a@example.com', subject: 'S', text_body: 'x' }],
  })
  await fill(mine, batchId)
  await fill(theirs, null)
})

describe('GET /emails?tag= by pages', () => {
  const filters: [string, Record<string, string>][] = [
    ['no other filter', {}],
    ['a status', { status: 'sent' }],
    ['a batch', { batch_id: 'BATCH' }],
    ['a date range', { date_from: day(20), date_to: day(5) }],
    ['a status, a batch and a date range', { status: 'failed', batch_id: 'BATCH', date_from: day(29) }],
  ]
  const asked: [string, Tag[]][] = [
    ['one tag', [X]],
    ['two tags', [X, P]],
    ['two tags the other way round', [P, X]],
    ['a tag no record of the account carries', [{ name: 'campaign', value: 'none' }]],
  ]

  it.each(filters)('lists what the list keeps of the tagged emails, with %s', async (_, filter) => {
    const base = new URLSearchParams(
      Object.entries(filter).map(([k, v]) => [k, v === 'BATCH' ? String(batchId) : v]),
    )
    const all = await walk(base, 100)
    expect(all.length).toBeGreaterThan(0)
    for (const [name, tags] of asked) {
      const expected = all.filter((e) => carries(e.tags, tags)).map((e) => e.id)
      const query = new URLSearchParams(base)
      for (const t of tags) query.append('tag', `${t.name}:${t.value}`)
      for (const limit of [1, 3, 100]) {
        expect(
          (await walk(query, limit)).map((e) => e.id),
          `${name}, ${limit} a page`,
        ).toEqual(expected)
      }
    }
  })

  it("never lists another account's emails carrying the same tags", async () => {
    const query = new URLSearchParams([['tag', `${X.name}:${X.value}`]])
    const listed = await walk(query, 5)
    // Four of every eight records carry it.
    expect(listed).toHaveLength(24)
    const [theirsCount] = await app.services.sql<{ n: number }[]>`
      select count(*)::int as n from outbox where account_id = ${theirs.accountId} and tags @> ${app.services.sql.json([X])}`
    expect(theirsCount?.n).toBe(listed.length)
    const ids = new Set(listed.map((e) => e.id))
    const theirIds = await app.services.sql<
      { id: number }[]
    >`select id from outbox where account_id = ${theirs.accountId}`
    expect(theirIds.filter((r) => ids.has(r.id))).toEqual([])
  })
})
