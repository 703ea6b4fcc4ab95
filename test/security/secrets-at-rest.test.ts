/**
 * After a full tour of the product, no API key, SMTP password, session token,
 * dashboard password or MAILROOM_SECRET is in clear in any table (every column of every table
 * of every schema, graphile-worker's job payloads included) or in any log line written at the
 * most verbose level, neither as is nor base64-, hex- or URL-encoded.
 *
 * The tour uses each way a secret enters: the operator command (passwords on standard input,
 * keys created and rotated), the dashboard (sign-in, a wrong password, keys made and rotated,
 * a connection added with a wrong and a right password, a password change, a connection's
 * mailbox set with a wrong and a right password), the API (good and
 * wrong keys, sends, queued mail, batches, audiences, templates) and the hosted pages.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { registerCommands } from '../../src/cli/commands.ts'
import { runCli } from '../../src/cli/program.ts'
import { useTestApp } from '../support/app.ts'
import { audienceWith, createdBatch, waitForBatchEnd } from '../support/batches.ts'
import { type Client, client } from '../support/dashboard.ts'
import { startDovecot, type TestDovecot } from '../support/dovecot.ts'
import { captureLogs } from '../support/log-capture.ts'
import { waitForOutboxStatus } from '../support/queue.ts'
import type { SmtpSink } from '../support/smtp-sink.ts'

const MAILROOM_SECRET = 'mailroom-secret-Qk8vR2nX5tW9yB3dF6hJ1mP4'
const SMTP_PASSWORD = 'smtp-password-Zq81kL0vXr4ub2Ye'
const WRONG_SMTP_PASSWORD = 'smtp-wrong-Lm3Nb7Vc2Xz9Qw5E'
const DASHBOARD_PASSWORDS = [
  'dash-password-Hy27cN5mWq3e9T',
  'dash-changed-Pf4Gt8Rk1Sd6Uj',
  'dash-operator-Ba9Ce3Dh7Fk2Mn',
]
const WRONG_DASHBOARD_PASSWORD = 'dash-wrong-Wx6Yz1Ab5Cd8Ef'
const MAILBOX_PASSWORD = 'imap-password-Tr5Wq2Ze8Kp1Lx'
const WRONG_MAILBOX_PASSWORD = 'imap-wrong-Gh4Jn7Bv3Mc6Qs'
const WRONG_KEY = 'mr_wrongKeyThatNobodyWasGiven0123456789abcd'

const logs = captureLogs('trace')
const app = useTestApp({ secret: MAILROOM_SECRET, logLevel: 'trace' }, { log: logs.log })

/** Every secret the tour made or typed, by what it is. */
const secrets = new Map<string, string>([
  ['MAILROOM_SECRET', MAILROOM_SECRET],
  ['SMTP password', SMTP_PASSWORD],
  ['wrong SMTP password', WRONG_SMTP_PASSWORD],
  ['wrong dashboard password', WRONG_DASHBOARD_PASSWORD],
  ['wrong API key', WRONG_KEY],
  ['mailbox password', MAILBOX_PASSWORD],
  ['wrong mailbox password', WRONG_MAILBOX_PASSWORD],
  ...DASHBOARD_PASSWORDS.map((p, i) => [`dashboard password ${i + 1}`, p] as [string, string]),
])
/** What the operator command wrote on standard error (its refusals). */
let operatorErrors = ''

async function mailroom(args: string[], stdin = ''): Promise<Record<string, unknown>> {
  let stdout = ''
  const code = await runCli(
    args,
    {
      stdout: (text) => {
        stdout += text
      },
      stderr: (text) => {
        operatorErrors += text
      },
      stdin: async () => stdin,
      open: async () => ({ services: app.services, close: async () => {} }),
    },
    registerCommands,
  )
  if (code !== 0) throw new Error(`mailroom ${args.join(' ')} failed: ${operatorErrors}`)
  return JSON.parse(stdout) as Record<string, unknown>
}

function keyOnPage(html: string): string {
  const key = /mr_[A-Za-z0-9_-]{20,}/.exec(html)?.[0]
  if (!key) throw new Error('no key shown on the page')
  return key
}

/** The whole tour; returns nothing, it fills `secrets` with what it made. */
async function tour(): Promise<void> {
  const sink = await app.sink({ port: 2525, password: SMTP_PASSWORD })
  const { accountId, key } = await operatorSetsUp(sink)
  const browser = await ownerSignsIn(sink)
  await mailboxIsSet(browser, accountId)
  await apiAndHostedPages(key, accountId)
  await passwordsChange(browser, key, accountId)
}

/** The operator makes the account, its connection and a key, then rotates the key. */
async function operatorSetsUp(sink: SmtpSink): Promise<{ accountId: string; key: string }> {
  // The operator sets the account up.
  const account = await mailroom(
    ['account', 'create', '--email', 'owner@example.com', '--plan', 'pro', '--password-stdin'],
    DASHBOARD_PASSWORDS[0],
  )
  const accountId = String(account.id)
  const connection = await mailroom(
    [
      'connection',
      'add',
      '--account',
      accountId,
      '--host',
      sink.host,
      '--port',
      '2525',
      '--username',
      sink.username,
      '--password-stdin',
      '--from',
      'sender@example.com',
      '--rate',
      '6000',
    ],
    SMTP_PASSWORD,
  )
  await mailroom(['connection', 'update', String(connection.id), '--password-stdin'], SMTP_PASSWORD)
  const created = await mailroom(['key', 'create', '--account', accountId, '--name', 'operator key'])
  secrets.set('API key (created by the operator)', created.key as string)
  const rotated = await mailroom(['key', 'rotate', String(created.id)])
  const key = rotated.key as string
  secrets.set('API key (rotated by the operator)', key)
  return { accountId, key }
}

let imap: TestDovecot | undefined
afterAll(() => imap?.stop())

/** The operator sets the connection's mailbox; the owner tries a wrong password on the dashboard. */
async function mailboxIsSet(browser: Client, accountId: string): Promise<void> {
  imap = await startDovecot(inject('tls'), [{ username: 'reports@example.com', password: MAILBOX_PASSWORD }])
  const [connection] = await app.services.sql<{ id: number }[]>`
    select id from connections where account_id = ${Number(accountId)} order by id limit 1`
  const id = String(connection?.id)
  const login = [
    '--host',
    imap.host,
    '--port',
    '993',
    '--username',
    'reports@example.com',
    '--password-stdin',
  ]
  await mailroom(['connection', 'mailbox', 'set', id, ...login], MAILBOX_PASSWORD)
  await browser.get(`/dashboard/connections/${id}`)
  const fields = { mailbox_host: imap.host, mailbox_port: '143', mailbox_username: 'reports@example.com' }
  const refused = await browser.post(`/dashboard/connections/${id}/mailbox`, {
    ...fields,
    mailbox_password: WRONG_MAILBOX_PASSWORD,
  })
  expect(refused.status).toBe(400)
}

/** The owner signs in, once with a wrong password, makes keys and adds a connection. */
async function ownerSignsIn(sink: SmtpSink): Promise<Client> {
  // The owner signs in, once with a wrong password.
  const browser = client(app)
  await browser.get('/dashboard/login')
  expect(
    (
      await browser.post('/dashboard/login', {
        email: 'owner@example.com',
        password: WRONG_DASHBOARD_PASSWORD,
      })
    ).status,
  ).toBe(401)
  const signedIn = await browser.post('/dashboard/login', {
    email: 'owner@example.com',
    password: DASHBOARD_PASSWORDS[0] as string,
  })
  expect(signedIn.status).toBe(303)
  secrets.set('session token (first)', browser.cookies.get('mailroom_session') as string)
  await browser.get('/dashboard/keys')
  const dashboardKey = keyOnPage((await browser.post('/dashboard/keys', { name: 'page key' })).html)
  secrets.set('API key (created in the dashboard)', dashboardKey)
  const [row] = await app.services.sql<{ id: number }[]>`select id from api_keys where name = 'page key'`
  secrets.set(
    'API key (rotated in the dashboard)',
    keyOnPage((await browser.post(`/dashboard/keys/${row?.id}/rotate`)).html),
  )
  const addConnection = async (password: string) => {
    await browser.get('/dashboard/connections')
    const page = await browser.post('/dashboard/connections', {
      host: sink.host,
      port: '2525',
      username: sink.username,
      password,
      from: 'second@example.com',
    })
    return page.status
  }
  expect(await addConnection(WRONG_SMTP_PASSWORD)).toBe(400)
  expect(await addConnection(SMTP_PASSWORD)).toBe(303)
  return browser
}

/** The API, with a wrong key and the right one, and the hosted pages, until the mail is sent. */
async function apiAndHostedPages(key: string, accountId: string): Promise<void> {
  // The API, with a wrong key and the right one.
  expect(
    (
      await app.request('/send', {
        key: WRONG_KEY,
        body: { to: 'a@example.com', subject: 's', text_body: 't' },
      })
    ).status,
  ).toBe(401)
  const sent = await app.request('/send', {
    key,
    headers: { 'Idempotency-Key': 'tour-1' },
    body: { to: 'reader@example.com', subject: 'Hello', text_body: 'Hello there' },
  })
  expect(sent.status).toBe(200)
  const queued = await app.request('/enqueue', {
    key,
    body: { to: 'queued@example.com', subject: 'Queued', text_body: 'Later' },
  })
  expect(queued.status).toBe(200)
  const audienceId = await audienceWith(
    app,
    key,
    [{ email: 'member@example.com', payload: { name: 'Ann' } }],
    'Readers',
  )
  const template = await app.request('/templates', {
    key,
    body: { name: 'Welcome', subject: 'Hi {{name}}', text_body: 'Hi' },
  })
  const templateId = ((await template.json()) as { template: { id: number } }).template.id
  const batchId = await createdBatch(app, key, { template_id: templateId, audience_id: audienceId })

  // Hosted pages: a form and a sign-up page, set up by the operator, used by the public.
  const form = await mailroom(['form', 'create', '--account', accountId, '--name', 'Contact'])
  await mailroom(['signup-page', 'set', '--audience', String(audienceId), '--slug', 'readers'])
  expect(
    (
      await app.requestRoot(`/forms/${form.public_id}`, {
        body: new URLSearchParams({ email: 'visitor@example.com', message: 'Hi' }),
      })
    ).status,
  ).toBe(200)
  expect(
    (await app.requestRoot('/signup/readers', { body: new URLSearchParams({ email: 'new@example.com' }) }))
      .status,
  ).toBe(200)

  await app.worker()
  await waitForBatchEnd(app, key, batchId)
  await waitForOutboxStatus(
    app,
    Number(accountId),
    ((await queued.json()) as { outboxId: number }).outboxId,
    'sent',
  )
}

async function passwordsChange(browser: Client, key: string, accountId: string): Promise<void> {
  // Passwords change: in the dashboard (a new session), then by the operator.
  await browser.get('/dashboard/account')
  const changed = await browser.post('/dashboard/account/password', {
    current_password: DASHBOARD_PASSWORDS[0] as string,
    new_password: DASHBOARD_PASSWORDS[1] as string,
    repeat_password: DASHBOARD_PASSWORDS[1] as string,
  })
  expect(changed.status).toBeLessThan(400)
  secrets.set('session token (after the password change)', browser.cookies.get('mailroom_session') as string)
  await browser.get('/dashboard')
  expect((await browser.post('/dashboard/logout')).status).toBe(303)
  await mailroom(['account', 'set-password', accountId, '--password-stdin'], DASHBOARD_PASSWORDS[2])
  const again = client(app)
  await again.get('/dashboard/login')
  const lastSignIn = await again.post('/dashboard/login', {
    email: 'owner@example.com',
    password: DASHBOARD_PASSWORDS[2] as string,
  })
  expect(lastSignIn.status).toBe(303)
  secrets.set('session token (after set-password)', again.cookies.get('mailroom_session') as string)
  await app.stopWorkers()
  // Left waiting, so that a job's payload is in the dump.
  const waiting = await app.request('/enqueue', {
    key,
    body: { to: 'waiting@example.com', subject: 'Waiting', text_body: 'Until a worker runs' },
  })
  expect(waiting.status).toBe(200)
}

// --- Finding a secret, however it was written ---------------------------------------------------

/**
 * The texts that show `secret` in clear: itself, URL-encoded, hex, and base64 (standard and
 * URL-safe). Base64 of a secret inside a longer text depends on where it starts, so each of the
 * three alignments gives the characters that encode the secret's bytes alone.
 */
function encodingsOf(secret: string): string[] {
  const bytes = Buffer.from(secret)
  const base64 = [0, 1, 2].flatMap((shift) => {
    const text = Buffer.concat([Buffer.alloc(shift), bytes])
      .toString('base64')
      .replace(/=+$/, '')
    const whole = Math.floor((shift + bytes.length) / 3) * 4
    const core = text.slice(shift ? 4 : 0, whole)
    return [core, core.replaceAll('+', '-').replaceAll('/', '_')]
  })
  const hex = bytes.toString('hex')
  return [...new Set([secret, encodeURIComponent(secret), hex, hex.toUpperCase(), ...base64])]
}

/** "<what> (<form>) in <where>" for each secret found in `text`. */
function findings(text: string, where: string): string[] {
  const found: string[] = []
  for (const [what, secret] of secrets) {
    for (const form of encodingsOf(secret)) {
      if (text.includes(form))
        found.push(`${what} (${form === secret ? 'in clear' : `as ${form}`}) in ${where}`)
    }
  }
  return found
}

/** Every row of every base table of every schema, as PostgreSQL prints it, by table. */
async function dumpDatabase(): Promise<Map<string, string>> {
  const tables = await app.services.sql<{ schema: string; name: string }[]>`
    select table_schema as schema, table_name as name from information_schema.tables
    where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')
    order by 1, 2`
  const dump = new Map<string, string>()
  for (const { schema, name } of tables) {
    const table = `"${schema.replaceAll('"', '""')}"."${name.replaceAll('"', '""')}"`
    const rows = await app.services.sql.unsafe<{ row: string }[]>(`select t::text as row from ${table} t`)
    dump.set(`${schema}.${name}`, rows.map((r) => r.row).join('\n'))
  }
  return dump
}

let dump: Map<string, string>

beforeAll(async () => {
  await tour()
  dump = await dumpDatabase()
}, 120_000)

describe('secrets after a full tour', () => {
  it('the finder recognises a secret in each of its encodings', () => {
    const secret = 'sekrit-value-123456'
    for (const [prefix, suffix] of [
      ['', ''],
      ['a', 'b'],
      ['ab', ''],
      ['{"x":"', '"}'],
    ]) {
      const text = `${prefix}${secret}${suffix}`
      for (const written of [
        text,
        Buffer.from(text).toString('base64'),
        Buffer.from(text).toString('base64url'),
        Buffer.from(text).toString('hex'),
        encodeURIComponent(text),
      ]) {
        expect(
          encodingsOf(secret).some((form) => written.includes(form)),
          written,
        ).toBe(true)
      }
    }
  })

  it('the dump covers every table, graphile-worker’s jobs included, with the tour’s rows in them', () => {
    const names = [...dump.keys()]
    for (const table of [
      'public.accounts',
      'public.api_keys',
      'public.connections',
      'public.sessions',
      'public.account_passwords',
      'public.outbox',
    ]) {
      expect(dump.get(table), table).not.toBe('')
    }
    expect(names.filter((name) => name.startsWith('graphile_worker.') && dump.get(name))).toContain(
      'graphile_worker._private_jobs',
    )
    expect(dump.get('public.accounts')).toContain('owner@example.com')
    expect(secrets.size).toBeGreaterThanOrEqual(14)
  })

  it('no table holds a secret in clear or encoded', () => {
    expect([...dump].flatMap(([table, text]) => findings(text, table))).toEqual([])
  })

  it('no log line holds one, at the most verbose level', () => {
    expect(logs.lines.some((line) => line.level < 30)).toBe(true)
    expect(logs.lines.some((line) => line.msg === 'request')).toBe(true)
    expect([
      ...findings(logs.text(), 'the logs'),
      ...findings(operatorErrors, 'the operator command’s errors'),
    ]).toEqual([])
  })
})
