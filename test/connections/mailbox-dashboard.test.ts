import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { readMailbox } from '../../src/bounces/mailbox-reading.ts'
import { sealPassword } from '../../src/smtp/secret-box.ts'
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

  it('shows why the mailbox could not be read, and what was left in its folder', async () => {
    const { browser, page } = await connectionPage()
    const fields = {
      mailbox_host: server.host,
      mailbox_port: '993',
      mailbox_username: server.user.username,
      mailbox_password: server.user.password,
      move_handled: '1',
    }
    expectRedirect(await browser.post(`${page}/mailbox`, fields), page)
    expect(textOf((await browser.get(page)).html)).toContain('not read yet')
    const id = Number(page.split('/').at(-1))
    const { sql, secret, log, metrics } = app.services
    await server.append(server.user, 'Subject: Lunch?\r\n\r\nAre you free?\r\n')
    await readMailbox({ sql, secret, log, metrics, allowPrivate: true }, id)
    const read = textOf((await browser.get(page)).html)
    expect(read).toContain('last read')
    expect(read).toMatch(/0 reports for no email of this account, [1-9]\d* other message/)

    // The password was changed at the provider after the mailbox was saved.
    const wrong = 'changed-at-the-provider'
    await app.db.sql`update connection_mailboxes set password_encrypted = ${sealPassword(secret, wrong)}
      where connection_id = ${id}`
    await readMailbox({ sql, secret, log, metrics, allowPrivate: true }, id)
    const failing = await browser.get(page)
    expect(textOf(failing.html)).toMatch(/failing since .*refused the login.*Mail is still sent/)
    expect(failing.html).not.toContain(wrong)
  })
})
