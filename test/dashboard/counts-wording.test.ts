/** The dashboard words a count of one with its noun in the singular. */
import { expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { expectRedirect, signedIn, textOf } from '../support/dashboard.ts'

const app = useTestApp()

it('speaks of an audience of one member as of one member, before and after deleting it', async () => {
  const { browser, account } = await signedIn(app, { plan: 'pro' })
  await browser.get('/dashboard/audiences')
  expectRedirect(await browser.post('/dashboard/audiences', { name: 'Just one' }), '/dashboard/audiences')
  const [audience] = await app.services.sql<{ id: number }[]>`
    select id from audiences where account_id = ${account.id}`
  const own = `/dashboard/audiences/${audience?.id}`
  await browser.get(own)
  await browser.post(`${own}/members`, { lines: 'ann@example.com' })

  expect(textOf((await browser.get(own)).html)).toContain('Its 1 member goes with it.')
  expectRedirect(await browser.post(`${own}/delete`), '/dashboard/audiences')
  expect(textOf((await browser.get('/dashboard/audiences')).html)).toContain(
    'Audience “Just one” deleted, with its 1 member.',
  )
})
