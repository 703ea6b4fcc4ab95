import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { seedAccount, useTestApp } from '../support/app.ts'
import { expectRedirect, signedIn, textOf } from '../support/dashboard.ts'
import { startDovecot, type TestDovecot } from '../support/dovecot.ts'
import { startSink } from '../support/sending.ts'

const app = useTestApp()
let server: TestDovecot

beforeAll(async () => {
  server = await startDovecot(inject('tls'))
})
afterAll(() => server?.stop())

async function connectionPage() {
  const sink = await startSink(app)
  const owner = await seedAccount(app, { plan: 'pro', connection: { ...sink.login, from: 'm@example.com' } })
  const id = owner.connection?.id as number
  const { browser } = await signedIn(app, { account: owner.account })
  await browser.get(`/dashboard/connections/${id}`)
  return { id, browser, page: `/dashboard/connections/${id}` }
}

describe("the connection page's mailbox", () => {
  it('tests and saves a mailbox, shows it without its password, and removes it', async () => {
    const { browser, page } = await connectionPage()
    expect(textOf((await browser.get(page)).html)).toContain(
      'None: Mailroom reads no reports for this connection.',
    )
    const fields = {
      mailbox_host: server.host,
      mailbox_port: '143',
      mailbox_username: server.user.username,
      mailbox_password: server.user.password,
      folder: 'INBOX',
    }
    expectRedirect(await browser.post(`${page}/mailbox`, fields), page)
    const saved = await browser.get(page)
    const text = textOf(saved.html)
    expect(text).toContain('the IMAP server accepted the login')
    expect(text).toContain(`${server.host}:143 (STARTTLS)`)
    // The switch was left unticked: handled reports stay where they are.
    expect(text).toContain('left in the folder')
    expect(saved.html).not.toContain(server.user.password)
    expectRedirect(await browser.post(`${page}/mailbox-clear`), page)
    expect(textOf((await browser.get(page)).html)).toContain('Mailbox removed')
  })

  it("refuses a wrong password with the server's reason and saves nothing", async () => {
    const { browser, page } = await connectionPage()
    const refused = await browser.post(`${page}/mailbox`, {
      mailbox_host: server.host,
      mailbox_port: '993',
      mailbox_username: server.user.username,
      mailbox_password: 'not-the-password',
      move_handled: '1',
    })
    expect(refused.status).toBe(400)
    expect(textOf(refused.html)).toMatch(/refused the login/i)
    expect(refused.html).not.toContain('not-the-password')
    expect(textOf((await browser.get(page)).html)).toContain('None: Mailroom reads no reports')
  })
})
