/**
 * The dashboard's CSV import (docs/dashboard.md) within its bounds: a file past them is
 * refused with a sentence naming the bound, nothing added; a large one is added chunk by chunk,
 * its refused lines listed up to a hundred.
 */
import { describe, expect, it } from 'vitest'
import { createAudience } from '../../src/audiences/audiences.ts'
import { CSV_LIMITS } from '../../src/audiences/member-csv.ts'
import { importMembers, SHOWN_PROBLEMS } from '../../src/audiences/member-import.ts'
import type { ReadMembers } from '../../src/audiences/member-lines.ts'
import { useTestApp } from '../support/app.ts'
import { signedIn, textOf } from '../support/dashboard.ts'
import { countTurns } from '../support/event-loop-turns.ts'

const app = useTestApp()

async function audienceOfOwner() {
  const { browser, account } = await signedIn(app, { plan: 'pro' })
  const audience = await createAudience(app.services.sql, account.id, { name: 'Imported' })
  await browser.get(`/dashboard/audiences/${audience.id}`)
  const upload = (content: string) => {
    const form = new FormData()
    form.set('file', new File([content], 'members.csv', { type: 'text/csv' }))
    return browser.post(`/dashboard/audiences/${audience.id}/members/csv`, form)
  }
  const memberCount = async () => {
    const [row] = await app.services.sql<{ n: number }[]>`
      select count(*)::int as n from audience_members where audience_id = ${audience.id}`
    return row?.n
  }
  return { browser, account, audience, upload, memberCount }
}

function memberLines(count: number, first = 0): string {
  return Array.from({ length: count }, (_, i) => `m${first + i}@example.com,n${i}`).join('\n')
}

describe('importing a CSV file in the dashboard', () => {
  it('refuses a file of more members than an import takes, naming the bound, and adds nothing', async () => {
    const { upload, memberCount } = await audienceOfOwner()
    const page = await upload(`email,name\n${memberLines(CSV_LIMITS.members + 1)}\n`)
    expect(page.status).toBe(400)
    expect(textOf(page.html)).toContain(
      'The file has more than 100,001 lines: an import takes at most 100,000 members, one a line after the header row.',
    )
    expect(await memberCount()).toBe(0)
  })

  it('refuses a file of a million columns, naming the bound', async () => {
    const { upload, memberCount } = await audienceOfOwner()
    const header = ['email', ...Array.from({ length: 1_000_000 }, (_, i) => `c${i}`)].join(',')
    const page = await upload(`${header}\nann@example.com\n`)
    expect(page.status).toBe(400)
    expect(textOf(page.html)).toContain(
      'The header row is longer than 64 KiB: a file has at most 200 columns',
    )
    expect(await memberCount()).toBe(0)
  })

  it('adds a large file chunk by chunk and lists the first hundred refused lines, counting the rest', async () => {
    const { upload, memberCount, browser, audience } = await audienceOfOwner()
    const bad = SHOWN_PROBLEMS + 50
    const rows = [memberLines(2400), ...Array.from({ length: bad }, (_, i) => `not-an-address-${i},x`)]
    const page = await upload(`email,name\n${rows.join('\n')}\n`)
    expect(page.status).toBe(200)
    const text = textOf(page.html)
    expect(text).toContain(`2400 members added, 0 already in the audience. ${bad} lines were not added:`)
    expect(text).toContain('Line 2402 (not-an-address-0,x): “not-an-address-0” is not an email address')
    expect(text).toContain(`not-an-address-${SHOWN_PROBLEMS - 1}`)
    expect(text).not.toContain(`not-an-address-${SHOWN_PROBLEMS},`)
    expect(text).toContain('… and 50 more.')
    expect(await memberCount()).toBe(2400)
    // The same file again: every address already there, counted across chunks.
    await browser.get(`/dashboard/audiences/${audience.id}`)
    const again = await upload(`email,name\n${memberLines(2400)}\n`)
    expect(textOf((await browser.get(again.location ?? '')).html)).toContain(
      '0 members added, 2400 already in the audience.',
    )
  })
})

describe('typing many members in the dashboard', () => {
  it('lists the first hundred refused lines and puts every refused line back in the box', async () => {
    const { browser, audience, memberCount } = await audienceOfOwner()
    const bad = Array.from({ length: 300 }, (_, i) => `bad-${i}`)
    const page = await browser.post(`/dashboard/audiences/${audience.id}/members`, {
      lines: [memberLines(200), ...bad].join('\n'),
    })
    const text = textOf(page.html)
    expect(text).toContain('200 members added, 0 already in the audience. 300 lines were not added:')
    expect(text).toContain('… and 200 more.')
    expect(page.html).toContain(`${bad.join('\n')}</textarea>`)
    expect(await memberCount()).toBe(200)
  })

  it('does not read the next chunk before the event loop has had a turn, even when a chunk adds nothing', async () => {
    const { audience, account } = await audienceOfOwner()
    const turns = countTurns()
    const pulledAt: number[] = []
    const refusedOnly: ReadMembers = {
      members: [],
      problems: [{ line: 1, text: 'x', reason: 'not an address' }],
    }
    const chunks = function* () {
      for (let i = 0; i < 3; i++) {
        pulledAt.push(turns.count)
        yield refusedOnly
      }
    }
    const imported = await importMembers(app.services.sql, account.id, audience.id, chunks())
    turns.stop()
    expect(imported.problems).toHaveLength(3)
    expect(pulledAt[1]).toBeGreaterThan(pulledAt[0] ?? Infinity)
    expect(pulledAt[2]).toBeGreaterThan(pulledAt[1] ?? Infinity)
  })
})
