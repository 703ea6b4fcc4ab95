/**
 * The outbox's search: a whole address finds the emails sent to it (to, cc or bcc, any case) and
 * nothing else; any other text is looked for in subjects and addresses.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { type Client, signedIn } from '../support/dashboard.ts'

const app = useTestApp()
let browser: Client

/** Subjects of the rows a page lists, in order. */
function subjects(html: string): string[] {
  return [...html.matchAll(/<a href="\/dashboard\/outbox\/\d+">([^<]*)<\/a>/g)].map((m) => m[1] as string)
}

async function search(q: string): Promise<string[]> {
  const page = await browser.get(`/dashboard/outbox?q=${encodeURIComponent(q)}`)
  expect(page.status).toBe(200)
  return subjects(page.html)
}

beforeAll(async () => {
  const signed = await signedIn(app, { plan: 'pro' })
  browser = signed.browser
  const other = await signedIn(app)
  // Oldest first: [account, subject, to, cc, bcc].
  const rows: [number, string, string[], string[], string[]][] = [
    [signed.account.id, 'To her', ['Ann@Example.com'], [], []],
    [signed.account.id, 'Copied to her', ['bob@example.com'], ['ann@example.com'], []],
    [signed.account.id, 'Blind copy to her', ['bob@example.com'], [], ['ANN@EXAMPLE.COM']],
    [signed.account.id, 'To a longer address', ['joann@example.com'], [], []],
    [signed.account.id, 'To a longer domain', ['ann@example.com.au'], [], []],
    [signed.account.id, 'About ann@example.com', ['bob@example.com'], [], []],
    [other.account.id, 'Another account to her', ['ann@example.com'], [], []],
  ]
  for (const [accountId, subject, to, cc, bcc] of rows) {
    await app.services.sql`
      insert into outbox (account_id, status, from_address, to_addresses, cc_addresses, bcc_addresses, subject, message_id)
      values (${accountId}, 'sent', 'me@example.com', ${to}, ${cc}, ${bcc}, ${subject}, ${`<${subject}@example.com>`})`
  }
})

describe('searching the outbox', () => {
  it('for a whole address finds the emails whose to, cc or bcc is that address, in any case, newest first', async () => {
    const hers = ['Blind copy to her', 'Copied to her', 'To her']
    expect(await search('ann@example.com')).toEqual(hers)
    expect(await search('aNN@Example.COM')).toEqual(hers)
  })

  it('for a whole address does not find a longer address holding it, nor a subject naming it', async () => {
    const found = await search('ann@example.com')
    expect(found).not.toContain('To a longer address')
    expect(found).not.toContain('To a longer domain')
    expect(found).not.toContain('About ann@example.com')
  })

  it("never finds another account's email", async () => {
    expect(await search('ann@example.com')).not.toContain('Another account to her')
    expect(await search('her')).not.toContain('Another account to her')
  })

  it('for anything else finds the text within subjects and addresses, as before', async () => {
    expect(await search('ann@example')).toEqual([
      'About ann@example.com',
      'To a longer domain',
      'To a longer address',
      'Blind copy to her',
      'Copied to her',
      'To her',
    ])
    expect(await search('LONGER')).toEqual(['To a longer domain', 'To a longer address'])
    expect(await search('example.com.au')).toEqual(['To a longer domain'])
  })
})
