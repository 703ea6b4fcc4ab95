/**
 * A page filtered by a range of days, in the API and the dashboard: newest first by creation,
 * walked page by page from either one's cursor, every record of the range once.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import type { Account } from '../../../src/accounts/accounts.ts'
import { seedAccount, useTestApp } from '../../support/app.ts'
import { signedIn } from '../../support/dashboard.ts'

const app = useTestApp()
const RANGE = 'date_from=2025-03-03&date_to=2025-03-05'
let key: string
let account: Account
/** The account's records in the range, newest first by creation (ties: the later id first). */
let inRange: number[]
/** The records made in one instant. */
let block: number[]
let edges: { first: number; last: number; before: number; after: number }

/** The account's records as `select`, each made at the instant it names. */
async function insert(accountId: number, select: string): Promise<void> {
  await app.services.sql.unsafe(`
    insert into outbox (account_id, status, from_address, to_addresses, subject, message_id, created_at)
    select ${accountId}, 'sent', 'me@example.com', array['r' || n || '@example.com'], 'S ' || n,
      '<' || n || '@example.com>', at
    from (${select}) as s(n, at)`)
}

beforeAll(async () => {
  const seeded = await seedAccount(app, { plan: 'pro' })
  key = seeded.key
  account = seeded.account
  const id = seeded.account.id
  // Each edge of the range, and the instants just outside it.
  await insert(
    id,
    `values (1, '2025-03-02 23:59:59.999999+00'::timestamptz), (2, '2025-03-03 00:00:00+00'),
    (3, '2025-03-05 23:59:59.999999+00'), (4, '2025-03-06 00:00:00+00')`,
  )
  // A batch's block: many records made in one instant, with ids in a row.
  await insert(id, `select n, '2025-03-04 12:00:00+00'::timestamptz from generate_series(100, 219) n`)
  // Records spread over the range, made in an order their ids do not follow (concurrent
  // transactions commit in another order than they took their ids).
  await insert(
    id,
    `select n, '2025-03-03 01:00:30+00'::timestamptz + (n - 300) * interval '70 minutes'
    from generate_series(300, 339) n order by n % 3, n desc`,
  )
  // Within one second, the later made first: an order to the second would put them by id.
  await insert(
    id,
    `select n, '2025-03-04 18:00:00+00'::timestamptz + (n - 500) * interval '100 milliseconds'
    from generate_series(500, 509) n order by n desc`,
  )
  await insert(
    id,
    `select n, '2025-01-01 00:00:00+00'::timestamptz + (n - 400) * interval '1 day'
    from generate_series(400, 404) n`,
  )
  const rows = await app.services.sql<{ id: number; subject: string; at: Date }[]>`
    select id, subject, created_at as at from outbox where account_id = ${id}`
  const idOf = (subject: string) => rows.find((r) => r.subject === subject)?.id as number
  block = rows.filter((r) => r.at.getTime() === Date.parse('2025-03-04T12:00:00Z')).map((r) => r.id)
  edges = { before: idOf('S 1'), first: idOf('S 2'), last: idOf('S 3'), after: idOf('S 4') }
  const start = Date.parse('2025-03-03T00:00:00Z')
  const end = Date.parse('2025-03-06T00:00:00Z')
  inRange = rows
    .filter((r) => r.at.getTime() >= start && r.at.getTime() < end)
    .sort((a, b) => b.at.getTime() - a.at.getTime() || b.id - a.id)
    .map((r) => r.id)
  expect(inRange.length).toBe(2 + 120 + 40 + 10)
})

/** Every page from the first, following each page's cursor; `between` runs between two pages. */
async function walk(limit: number, between?: (cursor: string) => Promise<void>): Promise<number[]> {
  const seen: number[] = []
  let cursor: string | null = null
  do {
    const query: string = `/emails?${RANGE}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`
    const res = await app.request(query, { key })
    expect(res.status).toBe(200)
    const body = (await res.json()) as { emails: { id: number }[]; pagination: { nextCursor: string | null } }
    seen.push(...body.emails.map((e) => e.id))
    cursor = body.pagination.nextCursor
    if (cursor && between) await between(cursor)
  } while (cursor)
  return seen
}

describe('a page with a date range', () => {
  it('walked by its cursor gives every record of the range once, newest first by creation, through a block made in one instant', async () => {
    const seen = await walk(7)
    expect(seen).toEqual(inRange)
    expect(seen).toContain(edges.first)
    expect(seen).toContain(edges.last)
    expect(seen).not.toContain(edges.before)
    expect(seen).not.toContain(edges.after)
  })

  it("is the dashboard's outbox's too, page after page", async () => {
    const { browser } = await signedIn(app, { account })
    const seen: number[] = []
    let path: string | undefined = '/dashboard/outbox?from=2025-03-03&to=2025-03-05'
    while (path) {
      const page = await browser.get(path)
      expect(page.status).toBe(200)
      seen.push(...[...page.html.matchAll(/<a href="\/dashboard\/outbox\/(\d+)">/g)].map((m) => Number(m[1])))
      path = /href="(\/dashboard\/outbox\?[^"]*before=\d+)"/.exec(page.html)?.[1]?.replaceAll('&amp;', '&')
    }
    expect(seen).toEqual(inRange)
  })

  // Last: it purges one of the records.
  it('goes on from a cursor whose record was purged meanwhile, where it was', async () => {
    const purged: number[] = []
    const seen = await walk(7, async (cursor) => {
      // The first record of the block a cursor names.
      const id = Number(Buffer.from(cursor, 'base64url').toString())
      if (purged.length > 0 || !block.includes(id)) return
      purged.push(id)
      await app.services.sql`delete from outbox where id = ${id}`
    })
    expect(purged).toHaveLength(1)
    // It was listed, last on the page before it went.
    expect(seen).toEqual(inRange)
  })
})
