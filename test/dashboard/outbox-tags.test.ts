/**
 * The dashboard's outbox filters by tag (`name:value`, several separated by spaces, every one to
 * match, on the signed-in account only), keeps the filter on its pages, refuses a malformed one by
 * name, and the message page shows each tag as a link to the messages that carry it.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { type Client, signedIn, textOf } from '../support/dashboard.ts'
import { ESCAPED, HOSTILE } from '../support/dashboard-pages.ts'

const app = useTestApp()
let browser: Client
let ids: number[]

/** Subjects of the rows a page lists, in order. */
function subjects(html: string): string[] {
  return [...html.matchAll(/<a href="\/dashboard\/outbox\/\d+">([^<]*)<\/a>/g)].map((m) => m[1] as string)
}

beforeAll(async () => {
  const signed = await signedIn(app, { plan: 'pro' })
  browser = signed.browser
  // 60 records, oldest first: every one `n:<n>` and `all:yes`, the even ones `kind:even`, every
  // third `third:yes`.
  const rows = await app.services.sql<{ id: number }[]>`
    insert into outbox (account_id, status, from_address, to_addresses, subject, message_id, tags)
    select ${signed.account.id}, 'sent', 'me@example.com', array['user' || n || '@example.com'], 'Subject ' || n,
      '<' || n || '@example.com>',
      jsonb_build_array(jsonb_build_object('name', 'n', 'value', n::text), '{"name": "all", "value": "yes"}'::jsonb)
        || case when n % 2 = 0 then '[{"name": "kind", "value": "even"}]' else '[]' end::jsonb
        || case when n % 3 = 0 then '[{"name": "third", "value": "yes"}]' else '[]' end::jsonb
    from generate_series(1, 60) as n order by n
    returning id`
  ids = rows.map((row) => row.id)
  // Another account's records carrying the same tags are never listed.
  const other = await signedIn(app)
  await app.services.sql`
    insert into outbox (account_id, status, from_address, to_addresses, subject, message_id, tags)
    values (${other.account.id}, 'sent', 'x@example.com', '{a@example.com}', 'Not mine', '<o@x>',
      '[{"name": "kind", "value": "even"}, {"name": "third", "value": "yes"}]')`
})

describe('the outbox filtered by tag', () => {
  it.each([
    ['tag=n:7', 1, 'Subject 7'],
    ['tag=kind:even', 30, 'Subject 60'],
    ['tag=kind:even+third:yes', 10, 'Subject 60'],
    ['tag=kind:even,third:yes', 10, 'Subject 60'],
    ['tag=++kind:even++', 30, 'Subject 60'],
    ['tag=kind:even+n:7', 0, undefined],
    ['tag=kind:EVEN', 0, undefined],
    ['tag=third:yes&q=subject%205', 3, 'Subject 57'],
  ])('%s', async (query, count, newest) => {
    const page = await browser.get(`/dashboard/outbox?${query}`)
    expect(page.status).toBe(200)
    const listed = subjects(page.html)
    expect(listed).toHaveLength(count)
    expect(listed[0]).toBe(newest)
    expect(page.html).not.toContain('Not mine')
  })

  it('shows the tag field as typed, and keeps the filter on the older page and the live part', async () => {
    const first = await browser.get('/dashboard/outbox?tag=n:1+kind:even')
    expect(subjects(first.html)).toEqual([])
    const all = await browser.get('/dashboard/outbox?tag=kind:even')
    expect(all.html).toMatch(/<input name="tag" value="kind:even"/)
    expect(subjects(all.html)).toHaveLength(30)
    const tagged = await browser.get('/dashboard/outbox?tag=n:1')
    expect(tagged.html).toContain('data-live="/dashboard/outbox/live?tag=n%3A1"')
    const live = await browser.get('/dashboard/outbox/live?tag=third:yes', { 'x-mailroom-live': '1' })
    expect(subjects(live.html)).toHaveLength(20)
  })

  it('pages through the tagged messages with the filter kept', async () => {
    const first = await browser.get('/dashboard/outbox?tag=all:yes+kind:even')
    expect(first.html).not.toContain('before=')
    const all = await browser.get('/dashboard/outbox?tag=all:yes')
    expect(subjects(all.html)).toHaveLength(50)
    const older = /href="(\/dashboard\/outbox\?tag=all%3Ayes&amp;before=\d+)"/.exec(all.html)?.[1]
    expect(older).toBeDefined()
    const second = await browser.get((older as string).replaceAll('&amp;', '&'))
    expect(subjects(second.html)).toHaveLength(10)
    expect(subjects(second.html).at(-1)).toBe('Subject 1')
  })

  it('refuses a malformed tag by name, and shows it back escaped', async () => {
    for (const bad of ['kind', 'kind:', ':even', 'a:b:c', 'caf%C3%A9:x', encodeURIComponent(HOSTILE)]) {
      const page = await browser.get(`/dashboard/outbox?tag=${bad}`)
      expect(page.status, bad).toBe(400)
      expect(textOf(page.html), bad).toContain('tag: must be name:value')
    }
    const hostile = await browser.get(`/dashboard/outbox?tag=${encodeURIComponent(HOSTILE)}`)
    expect(hostile.html).toContain(`value="${ESCAPED}"`)
    const eleven = Array.from({ length: 11 }, (_, i) => `t${i}:v`).join('+')
    expect((await browser.get(`/dashboard/outbox?tag=${eleven}`)).status).toBe(400)
    expect((await browser.get(`/dashboard/outbox?tag=${eleven.replace('+t10:v', '')}`)).status).toBe(200)
  })
})

describe('the message page', () => {
  it('shows each tag, a link to the messages carrying it; none when it has none', async () => {
    const page = await browser.get(`/dashboard/outbox/${ids[5]}`)
    expect(page.status).toBe(200)
    expect(textOf(page.html)).toContain('Tags n:6 all:yes kind:even third:yes')
    expect(page.html).toContain('href="/dashboard/outbox?tag=kind%3Aeven"')
    const odd = await browser.get(`/dashboard/outbox/${ids[0]}`)
    expect(textOf(odd.html)).toContain('Tags n:1 all:yes Attempts')
    const filtered = await browser.get('/dashboard/outbox?tag=kind%3Aeven')
    expect(subjects(filtered.html)).toHaveLength(30)
  })
})
