import { beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { type Client, signedIn, textOf } from '../support/dashboard.ts'

const app = useTestApp()
let browser: Client
let accountId: number
let batchId: number

/** Subjects of the rows a page lists, in order. */
function subjects(html: string): string[] {
  return [...html.matchAll(/<a href="\/dashboard\/outbox\/\d+">([^<]*)<\/a>/g)].map((m) => m[1] as string)
}

beforeAll(async () => {
  const signed = await signedIn(app, { plan: 'pro' })
  browser = signed.browser
  accountId = signed.account.id
  const [batch] = await app.services.sql<{ id: number }[]>`
    insert into batches (account_id, name, total_count) values (${accountId}, 'B', 3) returning id`
  batchId = batch?.id as number
  // 60 records, oldest first: every third failed, some in the batch, three days apart for some.
  await app.services.sql`
    insert into outbox (account_id, status, from_address, to_addresses, cc_addresses, subject, message_id, batch_id, created_at)
    select ${accountId}, case when n % 3 = 0 then 'failed' else 'sent' end, 'me@example.com',
      array['user' || n || '@Example.com'], case when n = 7 then '{boss@example.com}' else '{}' end::text[],
      'Subject ' || n || case when n = 5 then ' 100%_off' else '' end, '<' || n || '@example.com>',
      case when n <= 3 then ${batchId}::int end,
      case when n <= 10 then '2024-03-01 12:00:00+00'::timestamptz + n * interval '1 hour' else now() end
    from generate_series(1, 60) as n`
  // Another account's records are never listed.
  const other = await signedIn(app)
  await app.services.sql`
    insert into outbox (account_id, status, from_address, to_addresses, subject, message_id)
    values (${other.account.id}, 'sent', 'x@example.com', '{user1@example.com}', 'Subject 1 other', '<o@x>')`
})

describe('the outbox list', () => {
  it('is newest first, 50 a page, with a link to the older ones', async () => {
    const first = await browser.get('/dashboard/outbox')
    const listed = subjects(first.html)
    expect(listed).toHaveLength(50)
    expect(listed[0]).toBe('Subject 60')
    const older = /href="(\/dashboard\/outbox\?before=\d+)"/.exec(first.html)?.[1] as string
    const second = subjects((await browser.get(older)).html)
    expect(second).toHaveLength(10)
    expect(second[0]).toBe('Subject 10')
    expect(second.at(-1)).toBe('Subject 1')
    expect(first.html).toContain('data-live="/dashboard/outbox/live"')
  })

  it.each([
    ['status=failed', 20, 'Subject 60'],
    [`batch=BATCH`, 3, 'Subject 3'],
    ['from=2024-03-01&to=2024-03-01', 10, 'Subject 10'],
    ['from=2024-03-02', 50, 'Subject 60'],
    ['to=2024-02-29', 0, undefined],
    ['q=USER7%40example', 1, 'Subject 7'],
    ['q=boss', 1, 'Subject 7'],
    ['q=100%25_', 1, 'Subject 5 100%_off'],
    ['q=%25', 1, 'Subject 5 100%_off'],
    ['status=failed&q=subject%205', 3, 'Subject 57'],
  ])('filters by %s', async (query, count, newest) => {
    const page = await browser.get(`/dashboard/outbox?${query.replace('BATCH', String(batchId))}`)
    expect(page.status).toBe(200)
    const listed = subjects(page.html)
    expect(listed.length).toBe(count)
    expect(listed[0]).toBe(newest)
  })

  it('keeps the filter on its pages', async () => {
    const first = await browser.get('/dashboard/outbox?status=sent')
    expect(subjects(first.html)).toHaveLength(40)
    expect(first.html).not.toContain('before=')
    const all = await browser.get('/dashboard/outbox?q=subject')
    const older = /href="(\/dashboard\/outbox\?q=subject&amp;before=\d+)"/.exec(all.html)?.[1]
    expect(older).toBeDefined()
  })

  it('refuses a filter that makes no sense, naming it', async () => {
    const page = await browser.get(
      '/dashboard/outbox?status=lost&from=2024-13-45&to=2025-02-30&connection=abc&before=0',
    )
    expect(page.status).toBe(400)
    const text = textOf(page.html)
    expect(text).toContain('status: must be one of scheduled, queued, sending, sent, failed, canceled')
    expect(text).toContain('from: must be a date (YYYY-MM-DD)')
    expect(text).toContain('to: must be a date (YYYY-MM-DD)')
    // February 30th looks like a date, but PostgreSQL refuses it: named, not a 500.
    const alone = await browser.get('/dashboard/outbox?to=2025-02-30')
    expect(alone.status).toBe(400)
    expect(textOf(alone.html)).toContain('to: must be a date (YYYY-MM-DD)')
    expect(text).toContain('connection: must be a number')
    expect(text).toContain('page: must be a number')
    const backwards = await browser.get('/dashboard/outbox?from=2026-11-26&to=2026-11-24')
    expect(backwards.status).toBe(400)
    expect(textOf(backwards.html)).toContain('to: must not be before from (2026-11-26)')
    expect((await browser.get('/dashboard/outbox?from=2026-11-24&to=2026-11-24')).status).toBe(200)
  })

  it('the live part answers the rows alone', async () => {
    const live = await browser.get('/dashboard/outbox/live?status=failed', { 'x-mailroom-live': '1' })
    expect(live.status).toBe(200)
    expect(live.html.startsWith('<div class="records"')).toBe(true)
    expect(subjects(live.html)).toHaveLength(20)
  })
})
