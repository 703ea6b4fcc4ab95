import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { expectRedirect, signedIn, textOf } from '../support/dashboard.ts'

const app = useTestApp()

describe('audience members', () => {
  it('are added from a CSV file whose header names the keys, with a problem per bad row', async () => {
    const { browser, account } = await signedIn(app, { plan: 'pro' })
    await browser.get('/dashboard/audiences')
    await browser.post('/dashboard/audiences', { name: 'CSV' })
    const [audience] = await app.services.sql<
      { id: number }[]
    >`select id from audiences where account_id = ${account.id}`
    const id = audience?.id as number
    await browser.get(`/dashboard/audiences/${id}`)
    const upload = (content: string | Uint8Array<ArrayBuffer>) => {
      const form = new FormData()
      form.set('file', new File([content], 'members.csv', { type: 'text/csv' }))
      return browser.post(`/dashboard/audiences/${id}/members/csv`, form)
    }
    const page = await upload(
      '\uFEFFName,EMAIL,plan\r\nAnn,ann@example.com,pro\r\n"Bob, Jr.",bob@example.com,\r\nNo one,not-an-address,free\r\n,ANN@example.com,x\r\n',
    )
    expect(page.status).toBe(200)
    expect(textOf(page.html)).toContain('2 members added, 1 already in the audience. 1 line was not added:')
    expect(textOf(page.html)).toContain(
      'Line 4 (No one,not-an-address,free): “not-an-address” is not an email address',
    )
    const members = await app.services
      .sql`select email, payload from audience_members where audience_id = ${id} order by id`
    expect(members).toEqual([
      { email: 'ann@example.com', payload: { Name: 'Ann', plan: 'pro' } },
      { email: 'bob@example.com', payload: { Name: 'Bob, Jr.' } },
    ])
    await browser.get(`/dashboard/audiences/${id}`)
    const noEmail = await upload('name,plan\r\nAnn,pro\r\n')
    expect(noEmail.status).toBe(400)
    expect(textOf(noEmail.html)).toContain('The first row must name the columns, one of them “email”.')
    await browser.get(`/dashboard/audiences/${id}`)
    const latin1 = await upload(
      new Uint8Array([0x65, 0x6d, 0x61, 0x69, 0x6c, 0x0a, 0xe9, 0x40, 0x78, 0x2e, 0x63, 0x6f]),
    )
    expect(textOf(latin1.html)).toContain('The file is not UTF-8 text')
  })

  it('are typed as lines of key=value pairs, searched and paged', async () => {
    const { browser, account } = await signedIn(app, { plan: 'pro' })
    await browser.get('/dashboard/audiences')
    await browser.post('/dashboard/audiences', { name: 'Typed' })
    const [audience] = await app.services.sql<
      { id: number }[]
    >`select id from audiences where account_id = ${account.id}`
    const id = audience?.id as number
    await browser.get(`/dashboard/audiences/${id}`)
    const lines = [
      'ann@example.com, name=Ann, VIP',
      '  bob@example.com ,first = Bob , gold, , silver',
      'carl@example.com',
      ...Array.from({ length: 60 }, (_, i) => `user${i}@example.com, n=${i}`),
    ]
    expectRedirect(
      await browser.post(`/dashboard/audiences/${id}/members`, { lines: lines.join('\n') }),
      `/dashboard/audiences/${id}`,
    )
    const members = await app.services.sql`
      select email, payload from audience_members where audience_id = ${id} order by id limit 3`
    expect(members).toEqual([
      { email: 'ann@example.com', payload: { name: 'Ann', attr_1: 'VIP' } },
      { email: 'bob@example.com', payload: { first: 'Bob', attr_1: 'gold', attr_2: 'silver' } },
      { email: 'carl@example.com', payload: null },
    ])
    const first = await browser.get(`/dashboard/audiences/${id}`)
    expect(textOf(first.html)).toContain('63 members added, 0 already in the audience.')
    expect(textOf(first.html)).toContain('Members (63)')
    const older = /href="([^"]*after=\d+)"/.exec(first.html)?.[1]?.replaceAll('&amp;', '&') as string
    const second = await browser.get(older)
    expect(textOf(second.html)).toContain('user59@example.com')
    expect(textOf(second.html)).not.toContain('ann@example.com')
    const found = await browser.get(`/dashboard/audiences/${id}?q=BOB`)
    expect(textOf(found.html)).toContain('bob@example.com')
    expect(textOf(found.html)).not.toContain('ann@example.com')
  })
})
