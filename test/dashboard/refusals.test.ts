import { describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from '../support/app.ts'
import { expectRedirect, signedIn, textOf } from '../support/dashboard.ts'
import { json } from '../support/dashboard-pages.ts'
import { startSink } from '../support/sending.ts'

const app = useTestApp()

describe('the rules of the API and the operator command, as readable refusals', () => {
  it('Free: one connection, one key, three templates; no batches or audiences', async () => {
    const { browser, account } = await signedIn(app)
    const sink = await startSink(app)
    const add = (from: string) =>
      browser.post('/dashboard/connections', {
        host: sink.host,
        port: '2525',
        username: sink.username,
        password: sink.password,
        from,
      })
    expectRedirect(await add('first@example.com'), '/dashboard/connections')
    const second = await add('second@example.com')
    expect(second.status).toBe(403)
    expect(textOf(second.html)).toContain(
      `The free plan allows 1 connection; \`mailroom account set-plan ${account.id} pro\` lifts this.`,
    )
    expect(second.html).toContain('value="second@example.com"')
    expect((await browser.post('/dashboard/keys', { name: 'one' })).status).toBe(200)
    const key = await browser.post('/dashboard/keys', { name: 'two' })
    expect(key.status).toBe(403)
    expect(textOf(key.html)).toContain(
      `The free plan allows 1 API key; \`mailroom account set-plan ${account.id} pro\` lifts this.`,
    )
    for (const n of [1, 2, 3]) {
      await browser.get('/dashboard/templates')
      expectRedirect(
        await browser.post('/dashboard/templates', { name: `t${n}`, subject: 's', text_body: 'b' }),
        '/dashboard/templates',
      )
    }
    await browser.get('/dashboard/templates')
    const fourth = await browser.post('/dashboard/templates', { name: 't4', subject: 's', text_body: 'b' })
    expect(fourth.status).toBe(403)
    expect(textOf(fourth.html)).toContain(
      `The free plan allows 3 templates; \`mailroom account set-plan ${account.id} pro\` lifts this.`,
    )
    for (const path of ['/dashboard/batches', '/dashboard/audiences']) {
      const page = await browser.get(path)
      expect(page.status).toBe(403)
      expect(textOf(page.html)).toContain(
        `This operation needs the Pro plan; the account is on the free plan: \`mailroom account set-plan ${account.id} pro\` lifts this.`,
      )
    }
    const [count] = await app.services
      .sql`select count(*)::int as n from connections where account_id = ${account.id}`
    expect(count?.n).toBe(1)
  })

  it('a connection whose SMTP login fails is not saved, and the server’s reason is shown', async () => {
    const { browser, account } = await signedIn(app)
    const sink = await startSink(app)
    const page = await browser.post('/dashboard/connections', {
      host: sink.host,
      port: '2525',
      username: sink.username,
      password: 'wrong',
      from: 'me@example.com',
    })
    expect(page.status).toBe(400)
    expect(textOf(page.html)).toMatch(/The SMTP server did not accept the login: .*535 5\.7\.8/)
    const [count] = await app.services
      .sql`select count(*)::int as n from connections where account_id = ${account.id}`
    expect(count?.n).toBe(0)
  })

  it('forms are checked like the API’s bodies, by name', async () => {
    const { browser } = await signedIn(app, { plan: 'pro' })
    const long = await browser.post('/dashboard/templates', {
      name: 'x'.repeat(256),
      subject: 's',
      text_body: 'b',
    })
    expect(long.status).toBe(400)
    expect(textOf(long.html)).toContain('name: at most 255 characters')
    await browser.get('/dashboard/templates')
    const bodiless = await browser.post('/dashboard/templates', { name: 'n', subject: 's' })
    expect(textOf(bodiless.html)).toContain('At least one of text_body or html_body is required')
    await browser.get('/dashboard/keys')
    const expiry = await browser.post('/dashboard/keys', { name: 'k', expires_in_days: '6' })
    expect(textOf(expiry.html)).toContain('Expiry must be a whole number of days from 7 to 365, or never.')
    await browser.get('/dashboard/keys')
    const nul = await browser.post('/dashboard/keys', { name: 'a\u0000b' })
    expect(nul.status).toBe(400)
    expect(textOf(nul.html)).toContain('NUL')
    // One past PostgreSQL's integer names no connection: refused like any other that is not one.
    for (const connection of ['2147483648', '9999999999']) {
      await browser.get('/dashboard/keys')
      const huge = await browser.post('/dashboard/keys', { name: 'k', connection })
      expect(huge.status).toBe(400)
      expect(textOf(huge.html)).toContain('Choose a connection')
    }
    await browser.get('/dashboard/audiences')
    const audience = await browser.post('/dashboard/audiences', { name: '' })
    expect(textOf(audience.html)).toContain('name: cannot be empty')
  })

  it('a body that is not the form its type says answers 400, not 500 (found by the page fuzz)', async () => {
    const { browser } = await signedIn(app, { plan: 'pro' })
    await browser.get('/dashboard/audiences')
    const fields = new URLSearchParams({ name: 'n', csrf: browser.token ?? '' }).toString()
    for (const type of ['multipart/form-data', 'multipart/form-data; boundary=x']) {
      const refused = await app.requestRoot('/dashboard/audiences', {
        method: 'POST',
        body: fields,
        headers: {
          'content-type': type,
          origin: 'http://localhost',
          cookie: `mailroom_session=${browser.cookies.get('mailroom_session')}`,
        },
      })
      expect(refused.status, type).toBe(400)
      expect(textOf(await refused.text())).toContain('The form could not be read')
    }
  })

  it('a batch that is still going cannot be deleted', async () => {
    const sink = await startSink(app)
    const owner = await seedAccount(app, {
      plan: 'pro',
      connection: { ...sink.login, from: 'b@example.com' },
    })
    const created = await json(
      await app.request('/send/batch', {
        key: owner.key,
        body: { recipients: ['a@example.com'], template: { subject: 's', text_body: 't' } },
      }),
    )
    const { browser } = await signedIn(app, { account: owner.account })
    await browser.get(`/dashboard/batches/${created.batch_id}`)
    const page = await browser.post(`/dashboard/batches/${created.batch_id}/delete`)
    expect(page.status).toBe(400)
    expect(textOf(page.html)).toContain(
      `Batch ${created.batch_id} is pending; only completed, failed or canceled batches can be deleted.`,
    )
  })
})
