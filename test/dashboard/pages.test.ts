import { beforeAll, describe, expect, it } from 'vitest'
import { authenticate } from '../../src/keys/keys.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import { expandNow } from '../support/batches.ts'
import { type Client, expectRedirect, signedIn, textOf } from '../support/dashboard.ts'
import { startSink } from '../support/sending.ts'

const app = useTestApp()
const HOSTILE = `<script>alert("x")</script>&"'`
const ESCAPED = '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&quot;&#39;'

/** Another account's resources, made through the same domain code and API an owner uses. */
interface Theirs {
  connectionId: number
  keyId: number
  outboxId: number
  batchId: number
  audienceId: number
  memberId: number
  templateId: number
}

let theirs: Theirs
let mine: { browser: Client; accountId: number }

async function json(res: Response) {
  return (await res.json()) as Record<string, unknown>
}

beforeAll(async () => {
  const sink = await startSink(app, { rejectRecipients: ['refused@example.com'] })
  const other = await seedAccount(app, {
    plan: 'pro',
    connection: { ...sink.login, from: 'other@example.com', rate: 6000 },
  })
  const key = other.key
  const sent = await json(
    await app.request('/send', { key, body: { to: 'ada@example.com', subject: HOSTILE, text_body: 'x' } }),
  )
  const batch = await json(
    await app.request('/send/batch', {
      key,
      body: { name: HOSTILE, recipients: ['a@example.com'], template: { subject: 's', text_body: 't' } },
    }),
  )
  const audience = await json(await app.request('/audiences', { key, body: { name: HOSTILE } }))
  const audienceId = (audience.audience as { id: number }).id
  await app.request(`/audiences/${audienceId}/members`, {
    key,
    body: { members: [{ email: 'm@example.com' }] },
  })
  const members = await json(await app.request(`/audiences/${audienceId}/members`, { key }))
  const template = await json(
    await app.request('/templates', { key, body: { name: HOSTILE, subject: HOSTILE, text_body: 't' } }),
  )
  theirs = {
    connectionId: other.connection?.id as number,
    keyId: other.keyId,
    outboxId: sent.outboxId as number,
    batchId: batch.batch_id as number,
    audienceId,
    memberId: (members.members as { id: number }[])[0]?.id as number,
    templateId: (template.template as { id: number }).id,
  }
  const signed = await signedIn(app, { plan: 'pro' })
  mine = { browser: signed.browser, accountId: signed.account.id }
})

describe("another account's IDs", () => {
  const pages = () => [
    `/dashboard/connections/${theirs.connectionId}`,
    `/dashboard/connections/${theirs.connectionId}/delete`,
    `/dashboard/outbox/${theirs.outboxId}`,
    `/dashboard/batches/${theirs.batchId}`,
    `/dashboard/batches/${theirs.batchId}/live`,
    `/dashboard/audiences/${theirs.audienceId}`,
    `/dashboard/templates/${theirs.templateId}`,
    '/dashboard/outbox/99999999999',
    '/dashboard/templates/2147483648',
  ]
  const actions = () => [
    `/dashboard/connections/${theirs.connectionId}`,
    `/dashboard/connections/${theirs.connectionId}/disable`,
    `/dashboard/connections/${theirs.connectionId}/enable`,
    `/dashboard/connections/${theirs.connectionId}/pause`,
    `/dashboard/connections/${theirs.connectionId}/resume`,
    `/dashboard/connections/${theirs.connectionId}/delete`,
    `/dashboard/keys/${theirs.keyId}/rotate`,
    `/dashboard/keys/${theirs.keyId}/revoke`,
    `/dashboard/keys/${theirs.keyId}/scope`,
    `/dashboard/batches/${theirs.batchId}/retry`,
    `/dashboard/batches/${theirs.batchId}/delete`,
    `/dashboard/audiences/${theirs.audienceId}`,
    `/dashboard/audiences/${theirs.audienceId}/delete`,
    `/dashboard/audiences/${theirs.audienceId}/members`,
    `/dashboard/audiences/${theirs.audienceId}/members/${theirs.memberId}/delete`,
    `/dashboard/templates/${theirs.templateId}`,
    `/dashboard/templates/${theirs.templateId}/preview`,
    `/dashboard/templates/${theirs.templateId}/delete`,
  ]

  it('answer 404 on every page', async () => {
    for (const path of pages()) {
      const page = await mine.browser.get(path)
      expect([path, page.status]).toEqual([path, 404])
      expect(textOf(page.html)).toContain('There is nothing at this address on your account.')
      expect(page.html).not.toContain('&lt;script&gt;')
    }
  })

  it('answer 404 on every action, and change nothing', async () => {
    for (const path of actions()) {
      const page = await mine.browser.post(path, { name: 'mine now', lines: 'x@example.com', minutes: '5' })
      expect([path, page.status]).toEqual([path, 404])
    }
    const sql = app.services.sql
    const [connection] =
      await sql`select disabled, paused_until from connections where id = ${theirs.connectionId}`
    expect(connection).toEqual({ disabled: false, paused_until: null })
    const [key] = await sql`select revoked_at from api_keys where id = ${theirs.keyId}`
    expect(key?.revoked_at).toBeNull()
    const [counts] = await sql`
      select (select count(*)::int from batches where id = ${theirs.batchId}) as batches,
             (select count(*)::int from audience_members where audience_id = ${theirs.audienceId}) as members,
             (select count(*)::int from templates where id = ${theirs.templateId}) as templates`
    expect(counts).toEqual({ batches: 1, members: 1, templates: 1 })
  })

  it('a key cannot be scoped to another account’s connection', async () => {
    await mine.browser.post('/dashboard/keys', { name: 'mine' })
    const [key] = await app.services.sql<
      { id: number }[]
    >`select id from api_keys where account_id = ${mine.accountId}`
    await mine.browser.get('/dashboard/keys')
    const page = await mine.browser.post(`/dashboard/keys/${key?.id}/scope`, {
      connection: String(theirs.connectionId),
    })
    expect(page.status).toBe(404)
    const [after] = await app.services.sql`select connection_id from api_keys where id = ${key?.id as number}`
    expect(after?.connection_id).toBeNull()
  })
})

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
      `Batch ${created.batch_id} is pending; only completed or failed batches can be deleted.`,
    )
  })
})

describe('keys', () => {
  it('shows a new key once; rotating shows the new secret and the old one stops working; revoking ends it', async () => {
    const { browser, account } = await signedIn(app, { plan: 'pro' })
    await browser.get('/dashboard/keys')
    const created = await browser.post('/dashboard/keys', { name: HOSTILE, expires_in_days: '30' })
    expect(created.status).toBe(200)
    const secret = /id="new-key"[^>]*value="(mr_[^"]+)"/.exec(created.html)?.[1] as string
    expect(await authenticate(app.services.sql, secret)).toMatchObject({ accountId: account.id })
    expect(created.html).toContain(ESCAPED)
    const list = await browser.get('/dashboard/keys')
    expect(list.html).not.toContain(secret)
    expect(list.html).toContain(secret.slice(0, 9))
    const [row] = await app.services.sql<
      { id: number }[]
    >`select id from api_keys where account_id = ${account.id}`
    const rotated = await browser.post(`/dashboard/keys/${row?.id}/rotate`)
    const fresh = /id="new-key"[^>]*value="(mr_[^"]+)"/.exec(rotated.html)?.[1] as string
    expect(fresh).not.toBe(secret)
    expect(await authenticate(app.services.sql, secret)).toBeUndefined()
    expect(await authenticate(app.services.sql, fresh)).toBeDefined()
    expectRedirect(await browser.post(`/dashboard/keys/${row?.id}/revoke`), '/dashboard/keys')
    expect(await authenticate(app.services.sql, fresh)).toBeUndefined()
    expect(textOf((await browser.get('/dashboard/keys')).html)).toContain('revoked')
  })
})

describe('connections', () => {
  it('say before deleting what happens to the queued mail, and fail it when deleted', async () => {
    const sink = await startSink(app)
    const owner = await seedAccount(app, {
      plan: 'pro',
      connection: { ...sink.login, from: 'q@example.com' },
    })
    const id = owner.connection?.id as number
    const { browser } = await signedIn(app, { account: owner.account })
    // Paused: queued mail waits (a disabled connection would refuse it).
    expectRedirect(await browser.post(`/dashboard/connections/${id}/pause`), `/dashboard/connections/${id}`)
    for (const n of [1, 2]) {
      const res = await app.request('/enqueue', {
        key: owner.key,
        body: { to: `${n}@example.com`, subject: 's', text_body: 't' },
      })
      expect(res.status).toBe(200)
    }
    const confirm = await browser.get(`/dashboard/connections/${id}/delete`)
    expect(textOf(confirm.html)).toContain(
      '2 queued messages will not be sent: they fail with “connection deleted”.',
    )
    // Its only connection: no other becomes the default.
    expect(textOf(confirm.html)).toContain('It is the account’s only connection')
    expect(textOf(confirm.html)).not.toContain('becomes the default')
    expectRedirect(await browser.post(`/dashboard/connections/${id}/delete`), '/dashboard/connections')
    const failed = await app.services.sql`
      select error from outbox where account_id = ${owner.account.id} and status = 'failed'`
    expect(failed.map((r) => r.error)).toEqual(['connection deleted', 'connection deleted'])
  })

  it('edit quota and rate, pause for a while and resume, with the API’s ranges', async () => {
    const sink = await startSink(app)
    const owner = await seedAccount(app, {
      plan: 'pro',
      connection: { ...sink.login, from: 'e@example.com' },
    })
    const id = owner.connection?.id as number
    const { browser } = await signedIn(app, { account: owner.account })
    await browser.get(`/dashboard/connections/${id}`)
    expectRedirect(
      await browser.post(`/dashboard/connections/${id}`, { quota: '500', per: 'hour', rate: '120' }),
      `/dashboard/connections/${id}`,
    )
    const edit = await browser.get(`/dashboard/connections/${id}`)
    expect(textOf(edit.html)).toContain('Connection e@example.com saved.')
    const bad = await browser.post(`/dashboard/connections/${id}`, { quota: '', rate: '60001' })
    expect(bad.status).toBe(400)
    expect(textOf(bad.html)).toContain(
      'The rate must be a whole number of messages per minute from 1 to 60000.',
    )
    await browser.get(`/dashboard/connections/${id}`)
    expectRedirect(
      await browser.post(`/dashboard/connections/${id}/pause`, { minutes: '30' }),
      `/dashboard/connections/${id}`,
    )
    const list = textOf((await browser.get('/dashboard/connections')).html)
    expect(list).toContain('500 per hour')
    expect(list).toMatch(/paused until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC by hand/)
    expectRedirect(await browser.post(`/dashboard/connections/${id}/resume`), `/dashboard/connections/${id}`)
    expect(textOf((await browser.get('/dashboard/connections')).html)).toContain('active')
  })
})

describe('every value from users is escaped', () => {
  it('on the overview, outbox, batch, audience, member and template pages', async () => {
    const sink = await startSink(app, { rejectRecipients: ['refused@example.com'] })
    const owner = await seedAccount(app, {
      plan: 'pro',
      connection: { ...sink.login, from: 'h@example.com', rate: 6000 },
    })
    const key = owner.key
    const batch = await json(
      await app.request('/send/batch', {
        key,
        body: {
          name: HOSTILE,
          recipients: ['refused@example.com'],
          template: { subject: HOSTILE, text_body: HOSTILE },
        },
      }),
    )
    const sent = await json(
      await app.request('/send', {
        key,
        body: { to: 'ok@example.com', subject: HOSTILE, html_body: HOSTILE },
      }),
    )
    // A server's reply is whatever the server says.
    const [replied] = await app.services.sql<{ id: number }[]>`
      insert into outbox (account_id, status, from_address, to_addresses, subject, message_id, error, html_body)
      values (${owner.account.id}, 'failed', 'h@example.com', '{x@example.com}', 'Reply', '<r@example.com>',
              ${`550 ${HOSTILE}`}, ${HOSTILE})
      returning id`
    const audience = await json(
      await app.request('/audiences', { key, body: { name: HOSTILE, description: HOSTILE } }),
    )
    const audienceId = (audience.audience as { id: number }).id
    await app.request(`/audiences/${audienceId}/members`, {
      key,
      body: { members: [{ email: 'p@example.com', payload: { [HOSTILE]: HOSTILE } }] },
    })
    const template = await json(
      await app.request('/templates', {
        key,
        body: { name: HOSTILE, subject: HOSTILE, html_body: `<b>{{x}}</b>${HOSTILE}` },
      }),
    )
    const { browser } = await signedIn(app, { account: owner.account })
    const paths = [
      '/dashboard/outbox',
      `/dashboard/outbox?q=${encodeURIComponent(HOSTILE)}`,
      `/dashboard/outbox/${sent.outboxId}`,
      `/dashboard/outbox/${replied?.id}`,
      '/dashboard/batches',
      `/dashboard/batches/${batch.batch_id}`,
      '/dashboard/audiences',
      `/dashboard/audiences/${audienceId}`,
      `/dashboard/audiences/${audienceId}?q=${encodeURIComponent(HOSTILE)}`,
      '/dashboard/templates',
      `/dashboard/templates/${(template.template as { id: number }).id}`,
    ]
    for (const path of paths) {
      const page = await browser.get(path)
      expect([path, page.status]).toEqual([path, 200])
      expect([path, page.html.includes('<script>alert')]).toEqual([path, false])
      expect([path, page.html.includes('&lt;script&gt;alert')]).toEqual([path, true])
    }
    // The HTML body, shown only inside the sandboxed frame's srcdoc (escaped as an attribute).
    const detail = await browser.get(`/dashboard/outbox/${replied?.id}`)
    expect(detail.html).toMatch(/<iframe class="html-preview" sandbox="" srcdoc="[^"]*&lt;script&gt;/)
  })
})

describe('the outbox detail', () => {
  it('shows the bodies when kept and says when they were not', async () => {
    const { browser, account } = await signedIn(app)
    const insert = (text: string | null, html: string | null) =>
      app.services.sql<{ id: number }[]>`
        insert into outbox (account_id, status, from_address, to_addresses, cc_addresses, subject, message_id,
                            error, attempts, text_body, html_body)
        values (${account.id}, 'failed', 'me@example.com', '{to@example.com}', '{cc@example.com}', 'Subject here',
                '<id-1@example.com>', '550 5.1.1 <to@example.com>: User unknown', 2, ${text}, ${html})
        returning id`
    const [kept] = await insert('Hello in text', '<p>Hello in <b>HTML</b></p>')
    const [gone] = await insert(null, null)
    const page = await browser.get(`/dashboard/outbox/${kept?.id}`)
    const text = textOf(page.html)
    for (const fact of [
      'to@example.com',
      'cc@example.com',
      'Subject here',
      '<id-1@example.com>',
      '550 5.1.1',
      'Hello in text',
      // Tried before the server's answers were kept per recipient.
      'The server’s answer for each recipient was not recorded for this message.',
    ])
      expect(text).toContain(fact)
    // Headed by a policy of its own: nothing remote loads in the frame.
    expect(page.html).toMatch(
      /srcdoc="&lt;meta http-equiv=&quot;Content-Security-Policy&quot; content=&quot;default-src &#39;none&#39;; img-src data:;[^"]*&gt;&lt;p&gt;Hello in &lt;b&gt;HTML&lt;\/b&gt;&lt;\/p&gt;"/,
    )
    expect(textOf((await browser.get(`/dashboard/outbox/${gone?.id}`)).html)).toContain(
      'The content of this message was not kept.',
    )
  })
})

describe('the outbox detail, recipient by recipient', () => {
  it("shows what the server said for each recipient, and the history: submission, the attempt's reply, the failure's reason", async () => {
    const sink = await startSink(app, { rejectRecipients: ['refused@example.com'] })
    const owner = await seedAccount(app, { plan: 'pro', connection: { ...sink.login, rate: 6000 } })
    const sent = await json(
      await app.request('/send', {
        key: owner.key,
        body: { to: 'ok@example.com', cc: 'refused@example.com', subject: 'Partly', text_body: 'x' },
      }),
    )
    const { browser } = await signedIn(app, { account: owner.account })
    const page = await browser.get(`/dashboard/outbox/${sent.outboxId}`)
    const text = textOf(page.html)
    expect(text).toMatch(/Recipients Address Outcome The server's reply ok@example\.com accepted/)
    expect(text).toMatch(/refused@example\.com refused 550[\s\S]*History Event When Reply or reason/)
    const when = '\\d{4}-\\d\\d-\\d\\d [\\d:]+ UTC'
    expect(text).toMatch(
      new RegExp(
        `History Event When Reply or reason Submitted \\(sent at once\\) ${when} none ` +
          `Attempt 1: sent ${when} 250 [^]*Failed ${when} Delivered to 1 of 2 recipients; refused@example\\.com: 550`,
      ),
    )
    expect(text).toContain('Error')
  })

  it('says a queued message was not tried yet; its history is its queuing', async () => {
    const { browser, account } = await signedIn(app)
    const [queued] = await app.services.sql<{ id: number }[]>`
      insert into outbox (account_id, status, from_address, to_addresses, subject, message_id)
      values (${account.id}, 'queued', 'me@example.com', '{to@example.com}', 'Later', '<q@example.com>')
      returning id`
    const text = textOf((await browser.get(`/dashboard/outbox/${queued?.id}`)).html)
    expect(text).toContain('Recipients Not tried yet.')
    expect(text).toMatch(/History Event When Reply or reason Queued \d{4}-\d\d-\d\d [\d:]+ UTC none Content/)
    expect(text).not.toContain('Attempt 1')
  })
})

describe('templates', () => {
  it('preview placeholders filled from sample values, escaped in the HTML, without saving', async () => {
    const { browser, account } = await signedIn(app)
    await browser.get('/dashboard/templates')
    await browser.post('/dashboard/templates', {
      name: 'Welcome',
      subject: 'Hi {{name}}',
      text_body: 'Hello {{ name }}, {{attr_1}}',
      html_body: '<p>{{name}}</p>',
    })
    const [row] = await app.services.sql<
      { id: number }[]
    >`select id from templates where account_id = ${account.id}`
    const first = await browser.get(`/dashboard/templates/${row?.id}`)
    expect(first.html).toContain('value="name=name, attr_1=attr_1"')
    const preview = await browser.post(`/dashboard/templates/${row?.id}/preview`, {
      name: 'Welcome',
      subject: 'Hi {{name}}!',
      text_body: 'Hello {{ name }}, {{attr_1}}',
      html_body: '<p>{{name}}</p>',
      sample: 'name=<Ann>, VIP',
    })
    const text = textOf(preview.html)
    expect(text).toContain('Subject: Hi <Ann>!')
    expect(text).toContain('Hello <Ann>, VIP')
    // Escaped once by the template (the value), once more as the frame's attribute.
    expect(preview.html).toMatch(/srcdoc="&lt;meta [^"]*&gt;&lt;p&gt;&amp;lt;Ann&amp;gt;&lt;\/p&gt;"/)
    const [saved] = await app.services.sql`select subject from templates where id = ${row?.id as number}`
    expect(saved?.subject).toBe('Hi {{name}}')
  })
})

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

describe('the overview', () => {
  it('shows the plan, today’s sends against the Free limit, quotas and a 30-day chart', async () => {
    const sink = await startSink(app)
    const owner = await seedAccount(app, {
      connection: { ...sink.login, from: 'o@example.com', quota: { quota: 50, per: 'day' }, rate: 6000 },
    })
    for (const n of [1, 2, 3]) {
      expect(
        (
          await app.request('/send', {
            key: owner.key,
            body: { to: `${n}@example.com`, subject: 's', text_body: 't' },
          })
        ).status,
      ).toBe(200)
    }
    const { browser } = await signedIn(app, { account: owner.account })
    const page = await browser.get('/dashboard')
    const text = textOf(page.html)
    expect(text).toContain('Plan Free')
    expect(text).toContain('3 of 100')
    expect(text).toContain('3 of 50 per day')
    expect(text).toContain('3 sent 0 failed')
    expect(page.html).toContain('<svg')
    expect((page.html.match(/class="sent"/g) ?? []).length).toBe(30)
  })
})

describe('batches', () => {
  it('retry queues the failed recipients again', async () => {
    const sink = await startSink(app)
    const owner = await seedAccount(app, {
      plan: 'pro',
      connection: { ...sink.login, from: 'r@example.com' },
    })
    const created = await json(
      await app.request('/send/batch', {
        key: owner.key,
        body: {
          name: 'Retry me',
          recipients: ['a@example.com', 'b@example.com'],
          template: { subject: 's', text_body: 't' },
        },
      }),
    )
    // No worker here: its recipients are moved into the outbox as it would, then made to fail.
    await expandNow(app, created.batch_id as number)
    await app.services.sql`
      update outbox set status = 'failed', error = '550 no', attempts = 1, next_attempt_at = null
      where batch_id = ${created.batch_id as number}`
    const { browser } = await signedIn(app, { account: owner.account })
    const page = await browser.get(`/dashboard/batches/${created.batch_id}`)
    expect(textOf(page.html)).toContain('Retry the 2 failed')
    expect(page.html).not.toContain('data-live')
    expectRedirect(
      await browser.post(`/dashboard/batches/${created.batch_id}/retry`),
      `/dashboard/batches/${created.batch_id}`,
    )
    const after = await browser.get(`/dashboard/batches/${created.batch_id}`)
    expect(textOf(after.html)).toContain('2 failed recipients queued again.')
    expect(after.html).toContain(`data-live="/dashboard/batches/${created.batch_id}/live"`)
    const statuses = await app.services
      .sql`select status from outbox where batch_id = ${created.batch_id as number}`
    expect(statuses.map((r) => r.status)).toEqual(['queued', 'queued'])
    // Each record's history keeps the failure the retry undid, and who retried it.
    const [one] = await app.services.sql<{ id: number }[]>`
      select id from outbox where batch_id = ${created.batch_id as number} order by id limit 1`
    const detail = textOf((await browser.get(`/dashboard/outbox/${one?.id}`)).html)
    expect(detail).toMatch(
      /Queued [\d: -]+ UTC none Failed [\d: -]+ UTC 550 no Retried from the batch page [\d: -]+ UTC none/,
    )
    const list = textOf((await browser.get('/dashboard/batches')).html)
    expect(list).toContain('Retry me')
  })
})

describe('assets', () => {
  it('are served by the app with long caching for their versioned address, and 304 when unchanged', async () => {
    const { browser } = await signedIn(app)
    const page = await browser.get('/dashboard')
    const hrefs = [...page.html.matchAll(/(?:href|src)="(\/dashboard\/assets\/[^"]+)"/g)].map(
      (m) => m[1] as string,
    )
    expect(hrefs).toHaveLength(3)
    for (const href of hrefs) {
      const res = await app.requestRoot(href.replaceAll('&amp;', '&'))
      expect(res.status).toBe(200)
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      const again = await app.requestRoot(href, {
        headers: { 'if-none-match': res.headers.get('etag') as string },
      })
      expect(again.status).toBe(304)
    }
    expect(page.html).not.toMatch(/(?:href|src)="(?:https?:)?\/\//)
  })
})
