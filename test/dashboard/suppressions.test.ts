/**
 * The dashboard's suppression list (docs/dashboard.md): searched, filtered and paged; addresses
 * added as lines with the API's bounds, removed through a confirmation, exported as CSV safe to
 * open in a spreadsheet and imported from CSV, each through the code the API uses.
 */
import { parse } from 'csv-parse/sync'
import { describe, expect, it } from 'vitest'
import { addSuppressions } from '../../src/db/suppressions.ts'
import { suppressionStrength } from '../../src/suppressions/strength.ts'
import { SUPPRESSION_CSV_ENTRIES, suppressionCsv } from '../../src/suppressions/suppression-csv.ts'
import { useTestApp } from '../support/app.ts'
import { expectRedirect, signedIn, textOf } from '../support/dashboard.ts'
import { ESCAPED, HOSTILE } from '../support/dashboard-pages.ts'

const app = useTestApp()
const LIST = '/dashboard/suppressions'

async function entriesOf(accountId: number) {
  return app.services.sql<{ email: string; reason: string; scope: string; source_type: string }[]>`
    select email, reason, scope, source_type from suppressions where account_id = ${accountId} order by id`
}

/** Entries as the settlement and the unsubscribe link write them. */
/** The account's entries are the seeded bounce of gone@example.com, then these added from the dashboard. */
async function expectSeededAnd(accountId: number, added: [email: string, scope: string][]) {
  expect(await entriesOf(accountId)).toEqual([
    { email: 'gone@example.com', reason: 'hard_bounce', scope: 'all', source_type: 'email' },
    ...added.map(([email, scope]) => ({ email, reason: 'manual', scope, source_type: 'dashboard' })),
  ])
}

async function seed(
  accountId: number,
  entries: { email: string; reason?: 'hard_bounce' | 'unsubscribe'; detail?: string; sourceId?: number }[],
) {
  for (const e of entries) {
    const reason = e.reason ?? 'hard_bounce'
    const scope = reason === 'unsubscribe' ? 'marketing' : 'all'
    await addSuppressions(app.services.sql, accountId, [
      {
        email: e.email,
        reason,
        scope,
        strength: suppressionStrength({ reason, scope }),
        detail: e.detail ?? null,
        sourceType: reason === 'unsubscribe' ? 'page' : 'email',
        sourceId: e.sourceId ?? 7,
      },
    ])
  }
}

function upload(browser: Awaited<ReturnType<typeof signedIn>>['browser'], content: string) {
  const form = new FormData()
  form.set('file', new File([content], 'suppressions.csv', { type: 'text/csv' }))
  return browser.post(`${LIST}/csv`, form)
}

describe('the suppressions page', () => {
  it('lists entries newest first with their source linked, searched by address prefix in any case, filtered by reason, paged', async () => {
    const { browser, account } = await signedIn(app)
    await seed(account.id, [
      { email: 'Gone@Example.com', detail: '550 5.1.1 <gone@example.com>: User unknown', sourceId: 41 },
      { email: 'left@example.com', reason: 'unsubscribe', sourceId: 3 },
      ...Array.from({ length: 55 }, (_, i) => ({ email: `bulk${i}@example.net` })),
    ])
    const first = await browser.get(LIST)
    expect(first.status).toBe(200)
    expect(first.html).toContain('<a href="/dashboard/suppressions" aria-current="page">Suppressions</a>')
    expect(first.html).toContain('href="/dashboard/outbox/7"')
    expect(textOf(first.html)).toContain('bulk54@example.net')
    expect(textOf(first.html)).not.toContain('Gone@Example.com')
    const older = /href="(\/dashboard\/suppressions\?cursor=[^"]+)"/.exec(first.html)?.[1] as string
    const second = textOf((await browser.get(older.replaceAll('&amp;', '&'))).html)
    expect(second).toContain('Gone@Example.com')
    expect(second).toContain('550 5.1.1 <gone@example.com>: User unknown')
    expect(second).not.toContain('bulk54@example.net')

    const found = await browser.get(`${LIST}?q=GONE%40ex`)
    expect(textOf(found.html)).toContain('Gone@Example.com Remove… hard_bounce scope all')
    expect(found.html).toContain('href="/dashboard/outbox/41"')
    expect(textOf(found.html)).not.toContain('bulk1@example.net')
    const unsubscribed = await browser.get(`${LIST}?reason=unsubscribe`)
    expect(textOf(unsubscribed.html)).toContain('left@example.com Remove… unsubscribe scope marketing')
    expect(unsubscribed.html).toContain('href="/dashboard/audiences/3"')
    expect(textOf(unsubscribed.html)).not.toContain('Gone@Example.com')

    const wrong = await browser.get(`${LIST}?reason=bounced&cursor=nonsense`)
    expect(wrong.status).toBe(400)
    expect(textOf(wrong.html)).toContain('reason: must be one of hard_bounce, complaint, unsubscribe, manual')
  })

  it('shows an entry’s hostile detail as text', async () => {
    const { browser, account } = await signedIn(app)
    await seed(account.id, [{ email: 'x@example.com', detail: HOSTILE }])
    const page = await browser.get(LIST)
    expect(page.html).toContain(ESCAPED)
    expect(page.html).not.toContain(HOSTILE)
  })

  it('adds typed addresses as manual entries of the scope chosen, counting those suppressed as strongly already', async () => {
    const { browser, account } = await signedIn(app)
    await seed(account.id, [{ email: 'gone@example.com' }])
    const done = await browser.post(LIST, {
      addresses: '  new@example.com \n\nGONE@example.com\nnew@example.com\nother@example.com',
      scope: 'marketing',
    })
    expectRedirect(done, LIST)
    expect(textOf((await browser.get(LIST)).html)).toContain(
      '2 addresses suppressed, 1 already on the list as strongly.',
    )
    await expectSeededAnd(account.id, [
      ['new@example.com', 'marketing'],
      ['other@example.com', 'marketing'],
    ])
  })

  it('refuses typed addresses past the API’s bounds or not addresses, naming each line, adding none and keeping the text', async () => {
    const { browser, account } = await signedIn(app)
    await browser.get(LIST)
    const typed = 'ok@example.com\nnot an address\n\n<script>@x\nfine@example.com'
    const refused = await browser.post(LIST, { addresses: typed, scope: 'all' })
    expect(refused.status).toBe(400)
    const text = textOf(refused.html)
    expect(text).toContain('line 2: “not an address” is not an email address')
    expect(text).toContain('line 4: “<script>@x” is not an email address')
    expect(refused.html).toContain('&lt;script&gt;@x\nfine@example.com</textarea>')
    const tooMany = await browser.post(LIST, {
      addresses: Array.from({ length: 1001 }, (_, i) => `a${i}@example.com`).join('\n'),
      scope: 'all',
    })
    expect(tooMany.status).toBe(400)
    expect(textOf(tooMany.html)).toContain('addresses: at most 1000 at a time (1001 given)')
    const none = await browser.post(LIST, { addresses: ' \n ', scope: 'all' })
    expect(textOf(none.html)).toContain('addresses: type at least one, one per line')
    const badScope = await browser.post(LIST, { addresses: 'ok@example.com', scope: 'everything' })
    expect(textOf(badScope.html)).toContain('scope: must be all or marketing')
    expect(await entriesOf(account.id)).toEqual([])
    const exactly = await browser.post(LIST, {
      addresses: Array.from({ length: 1000 }, (_, i) => `a${i}@example.com`).join('\n'),
      scope: 'all',
    })
    expectRedirect(exactly, LIST)
    expect(await entriesOf(account.id)).toHaveLength(1000)
  })

  it('refuses a post from another site or without the form token', async () => {
    const { browser, account } = await signedIn(app)
    await browser.get(LIST)
    const noToken = await browser.post(LIST, { addresses: 'a@example.com', scope: 'all' }, { token: false })
    expect(noToken.status).toBe(403)
    const elsewhere = await browser.post(
      LIST,
      { addresses: 'a@example.com', scope: 'all' },
      { origin: 'https://evil.example' },
    )
    expect(elsewhere.status).toBe(403)
    expect(await entriesOf(account.id)).toEqual([])
  })

  it('removes an address through its confirmation page; another account’s address is not found', async () => {
    const { browser, account } = await signedIn(app)
    const other = await signedIn(app)
    await seed(account.id, [{ email: 'a/b%c?d@example.com', detail: '550 5.1.1 no such user' }])
    await seed(other.account.id, [{ email: 'theirs@example.com' }])
    const list = await browser.get(LIST)
    const link = /href="(\/dashboard\/suppressions\/remove\?email=[^"]+)"/.exec(list.html)?.[1] as string
    const confirm = await browser.get(link.replaceAll('&amp;', '&'))
    expect(textOf(confirm.html)).toContain('Remove a/b%c?d@example.com from the suppression list?')
    expect(textOf(confirm.html)).toContain('550 5.1.1 no such user')
    expect(await entriesOf(account.id)).toHaveLength(1)
    expectRedirect(await browser.post(link.replaceAll('&amp;', '&')), LIST)
    expect(textOf((await browser.get(LIST)).html)).toContain(
      'a/b%c?d@example.com removed from the suppression list',
    )
    expect(await entriesOf(account.id)).toEqual([])
    const theirs = `${LIST}/remove?email=theirs%40example.com`
    expect((await browser.get(theirs)).status).toBe(404)
    expect((await browser.post(theirs)).status).toBe(404)
    expect(await entriesOf(other.account.id)).toHaveLength(1)
  })
})

describe('the suppression list as CSV', () => {
  it('exports every entry with its columns, a cell a spreadsheet would run as a formula made text', async () => {
    const { browser, account } = await signedIn(app)
    await seed(account.id, [
      {
        email: 'gone@example.com',
        detail: '=HYPERLINK("http://evil.example","x"), and "quotes"',
        sourceId: 9,
      },
      { email: '-1+2@example.com', reason: 'unsubscribe', sourceId: 4 },
    ])
    const res = await browser.get(`${LIST}/export.csv`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="suppressions.csv"')
    const rows = parse(res.html) as string[][]
    expect(rows[0]).toEqual(['email', 'reason', 'scope', 'detail', 'source_type', 'source_id', 'created_at'])
    expect(rows.slice(1).map((r) => r.slice(0, 6))).toEqual([
      ["'-1+2@example.com", 'unsubscribe', 'marketing', '', 'page', '4'],
      [
        'gone@example.com',
        'hard_bounce',
        'all',
        `'=HYPERLINK("http://evil.example","x"), and "quotes"`,
        'email',
        '9',
      ],
    ])
    expect(rows[1]?.[6]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
  })

  it('reads a long list a page of entries at a time, and gives each entry once', async () => {
    const { account } = await signedIn(app)
    await app.services.sql`
      insert into suppressions (account_id, email, reason, scope, strength, source_type)
      select ${account.id}, 'm' || n || '@example.com', 'manual', 'all', 3, 'api' from generate_series(1, 2500) n`
    const pieces: string[] = []
    for await (const piece of suppressionCsv(app.services.sql, account.id)) pieces.push(piece)
    // The header, then one piece a page of at most 1000 entries.
    expect(pieces.map((p) => p.split('\r\n').length - 1)).toEqual([1, 1000, 1000, 500])
    const emails = new Set(
      pieces.slice(1).flatMap((p) =>
        p
          .split('\r\n')
          .filter(Boolean)
          .map((l) => l.split(',')[0]),
      ),
    )
    expect(emails.size).toBe(2500)
  })

  it('imports a file of email and scope columns as manual entries, reporting added, existing and refused lines', async () => {
    const { browser, account } = await signedIn(app)
    await seed(account.id, [{ email: 'gone@example.com' }])
    await browser.get(LIST)
    const page = await upload(
      browser,
      '\uFEFFEmail,Scope\r\nann@example.com,\r\nGONE@example.com,all\r\nbob@example.com,marketing\r\nnot-an-address,all\r\ncarl@example.com,sometimes\r\n',
    )
    expect(page.status).toBe(200)
    const text = textOf(page.html)
    expect(text).toContain(
      '2 addresses suppressed, 1 already on the list as strongly. 2 lines were not added:',
    )
    expect(text).toContain('Line 5 (not-an-address,all): “not-an-address” is not an email address')
    expect(text).toContain(
      'Line 6 (carl@example.com,sometimes): the scope “sometimes” is not all or marketing',
    )
    await expectSeededAnd(account.id, [
      ['ann@example.com', 'all'],
      ['bob@example.com', 'marketing'],
    ])
  })

  it('imports its own export as it is, a formula-looking address included', async () => {
    const { browser, account } = await signedIn(app)
    await seed(account.id, [{ email: '=1+1@example.com' }, { email: 'plain@example.com' }])
    const exported = (await browser.get(`${LIST}/export.csv`)).html
    const other = await signedIn(app)
    await other.browser.get(LIST)
    expectRedirect(await upload(other.browser, exported), LIST)
    expect((await entriesOf(other.account.id)).map((e) => e.email).sort()).toEqual([
      '=1+1@example.com',
      'plain@example.com',
    ])
  })

  it('refuses a file past its bounds or without an email column whole, adding nothing', async () => {
    const { browser, account } = await signedIn(app)
    await browser.get(LIST)
    const lines = Array.from({ length: SUPPRESSION_CSV_ENTRIES + 1 }, (_, i) => `m${i}@example.com`)
    const tooLong = await upload(browser, `email\n${lines.join('\n')}\n`)
    expect(tooLong.status).toBe(400)
    expect(textOf(tooLong.html)).toContain(
      'The file has more than 100,001 lines: an import takes at most 100,000 addresses, one a line after the header row.',
    )
    const noEmail = await upload(browser, 'address\nann@example.com\n')
    expect(textOf(noEmail.html)).toContain('The first row must name the columns, one of them “email”.')
    const none = await browser.post(`${LIST}/csv`, new FormData())
    expect(textOf(none.html)).toContain('Choose a CSV file to import.')
    expect(await entriesOf(account.id)).toEqual([])
  }, 60_000)
})
