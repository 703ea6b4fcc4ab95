/**
 * Hostile input on the pages: every route of the dashboard and of the hosted pages
 * (taken from the apps' own route tables, so a page added later is fuzzed too), fed generated
 * form fields (the names the real forms use, and others) with hostile values, in every encoding a
 * client can choose, with random headers (origin, form token, cookies, content type), real and
 * hostile IDs: every answer is a success, a redirect or a 4xx page (or the hosted pages' JSON
 * error body), never a 5xx and never internals; the service keeps serving. At least 5,000
 * requests per run (with test/http/hostile-bodies.property.test.ts's API requests, over 10,000).
 */
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import { startSession } from '../../src/accounts/sessions.ts'
import { createDashboard } from '../../src/dashboard/app.ts'
import { createForm } from '../../src/forms/forms.ts'
import { createHosted } from '../../src/hosted/app.ts'
import type { Services } from '../../src/services.ts'
import { setSignupPage } from '../../src/signups/signup-pages.ts'
import { testConfig, useTestApp } from '../support/app.ts'
import { type Client, client } from '../support/dashboard.ts'
import { type Sender, startSender } from '../support/sending.ts'

const PUBLIC = 'http://localhost'
const app = useTestApp({ publicUrl: PUBLIC })

/** Runs per route; with about 60 routes, over 5,000 requests. */
const RUNS_PER_ROUTE = 90

let sender: Sender
let requests = 0
/** Real IDs by the path segment that names the resource. */
const real: Record<string, string> = {}
/** Every field name the real pages' forms use. */
const fieldNames = new Set<string>(['csrf', 'email', 'name', 'message', '_gotcha'])

interface Route {
  method: 'GET' | 'POST' | 'OPTIONS'
  path: string
}

function routesOf(routes: { method: string; path: string }[]): Route[] {
  return routes
    .filter((r) => r.method === 'GET' || r.method === 'POST' || r.method === 'OPTIONS')
    .filter((r) => !r.path.includes('/assets/') && !r.path.endsWith('.css'))
    .map((r) => ({ method: r.method as Route['method'], path: r.path }))
    .filter((r, i, all) => all.findIndex((o) => o.method === r.method && o.path === r.path) === i)
}

// The route tables are known before any service runs: building the apps reads settings only.
const settingsOnly = { config: testConfig('postgres://route-table.invalid/none') } as unknown as Services
const routes = [
  ...routesOf(createDashboard(settingsOnly).routes),
  ...routesOf(createHosted(settingsOnly).routes),
].sort((a, b) => `${a.path} ${a.method}`.localeCompare(`${b.path} ${b.method}`))

async function signedInBrowser(): Promise<Client> {
  const { token } = await startSession(app.services.sql, sender.accountId)
  const browser = client(app)
  browser.cookies.set('mailroom_session', token)
  await browser.get('/dashboard')
  return browser
}

beforeAll(async () => {
  sender = await startSender(app, 'page-fuzz', { plan: 'pro' })
  const json = async (path: string, body: unknown) =>
    (await app.request(path, { key: sender.key, body })).json()
  const audience = (await json('/audiences', { name: 'Fuzzed' })).audience.id as number
  await json(`/audiences/${audience}/members`, {
    members: [{ email: 'm@example.com' }, { email: 'n@example.com' }],
  })
  const members = await (await app.request(`/audiences/${audience}/members`, { key: sender.key })).json()
  const template = (await json('/templates', { name: 'T', subject: 'S', text_body: 'B' })).template.id
  const batch = (await json('/send/batch', { template_id: template, recipients: ['r@example.com'] })).batch_id
  const sent = await json('/send', { to: 'o@example.com', subject: 'Hi', text_body: 'B' })
  const form = await createForm(app.services.sql, sender.accountId, { name: 'Contact' }, PUBLIC)
  await setSignupPage(app.services.sql, sender.accountId, audience, { slug: 'fuzz-readers' }, PUBLIC)
  const [key] = await app.services.sql<{ id: number }[]>`
    select id from api_keys where account_id = ${sender.accountId} limit 1`
  Object.assign(real, {
    audiences: String(audience),
    members: String(members.members[0].id),
    templates: String(template),
    batches: String(batch),
    outbox: String(sent.outboxId),
    connections: String(sender.connectionId),
    keys: String(key?.id),
    forms: String(form.id),
    publicForm: form.public_id,
    slug: 'fuzz-readers',
  })
  // The field names of every form the real pages show.
  const browser = await signedInBrowser()
  for (const route of routes.filter((r) => r.method === 'GET')) {
    const page = await browser.get(realPath(route.path, {}))
    for (const [, name] of page.html.matchAll(/name="([^"]+)"/g)) fieldNames.add(name as string)
  }
})

/** The path with each parameter filled: the real ID unless `hostile` says otherwise. */
function realPath(template: string, hostile: Record<string, string>): string {
  return template.replace(/:(\w+)(\{[^}]*\})?/g, (_, name: string, _pattern, offset: number) => {
    if (hostile[name] !== undefined) return hostile[name]
    const segment = template.slice(0, offset).split('/').filter(Boolean).at(-1) ?? ''
    if (name === 'member') return real.members ?? '1'
    if (name === 'slug') return real.slug ?? 'x'
    if (segment === 'forms' && !template.startsWith('/dashboard')) return real.publicForm ?? 'x'
    if (name === 'token') return 'not-a-token'
    return real[segment] ?? '1'
  })
}

// --- hostile values
const oddText = fc.constantFrom(
  '',
  ' ',
  'x\ud800y',
  'a\u0000b',
  '\r\nBcc: x@example.com',
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  '{{unsubscribe_url}}',
  "'; drop table outbox; --",
  '\u202egnp.exe',
  '😀'.repeat(200),
  'é'.repeat(5000),
  `${'a'.repeat(65)}@example.com`,
  `${'a'.repeat(20_000)}@example.com`,
  ','.repeat(3000),
  '-1',
  '0',
  '2147483648',
  '99999999999999999999',
  '1e308',
  'true',
  'https://169.254.169.254/latest',
  'javascript:alert(1)',
  'smtp.example.com',
  '127.0.0.1',
  '465',
  'day',
  'pro',
)
const value = fc.oneof(oddText, fc.string({ maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 20 }))
const hostileId = fc.constantFrom(
  '0',
  '1',
  '2147483648',
  '99999999999999999999',
  '007',
  'abc',
  '%00',
  '..%2F..',
)

/** Form fields: mostly names the real forms use (known once the pages were read), some others. */
function fields(): fc.Arbitrary<Record<string, string>> {
  const name = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...fieldNames) },
    { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
  )
  return fc.dictionary(name, value, { maxKeys: 8 })
}

/** How the body is sent: a form as a browser sends it, or as a hostile client might. */
const encoding = fc.constantFrom('urlencoded', 'urlencoded', 'multipart', 'json', 'garbage', 'huge', 'none')
const tokenChoice = fc.constantFrom('page', 'page', 'none', 'garbage')
const originChoice = fc.constantFrom('own', 'own', 'none', 'foreign', 'null')
const extraHeaders = fc.record(
  {
    cookie: fc.constantFrom('mailroom_session=garbage', 'mailroom_session=', `a=${'b'.repeat(3000)}`, '=;;='),
    'x-forwarded-for': fc.constantFrom('::1', '999.1.1.1', 'x'.repeat(500), '10.0.0.1, 1.2.3.4'),
    accept: fc.constantFrom('application/json', 'text/html', '*/*', 'x'),
    'content-type': fc.constantFrom(
      'text/plain',
      'application/x-www-form-urlencoded; charset=utf-16',
      'multipart/form-data',
    ),
    'x-request-id': fc.constantFrom('', 'a'.repeat(300), 'id\u0001x', 'ok-id'),
  },
  { requiredKeys: [] },
)
const query = fc.oneof(
  fc.constant(''),
  fc
    .tuple(
      fc.constantFrom('status', 'batch', 'connection', 'from', 'to', 'q', 'before', 'page', 'error', 'x'),
      fc.oneof(oddText, fc.integer().map(String)),
    )
    .map(([name, v]) => `?${encodeURIComponent(name)}=${encodeURIComponent(v.toWellFormed())}`),
  // Percent-escapes no text has: a lone surrogate's bytes, NUL, a cut sequence.
  fc.constantFrom('?q=%ED%A0%80', '?status=%00', '?before=%E0%A4', '?q=%'),
)

function bodyOf(kind: string, form: Record<string, string>): { body?: BodyInit; type?: string } {
  switch (kind) {
    case 'urlencoded':
      return { body: new URLSearchParams(form).toString(), type: 'application/x-www-form-urlencoded' }
    case 'multipart': {
      const data = new FormData()
      for (const [name, v] of Object.entries(form)) data.append(name, v)
      data.append('file', new Blob(['email\nx@example.com\n\u0000']), 'members.csv')
      return { body: data }
    }
    case 'json':
      return { body: JSON.stringify(form), type: 'application/json' }
    case 'garbage':
      return { body: '%%%&&&=%ZZ&a=%E0%A4%A', type: 'application/x-www-form-urlencoded' }
    case 'huge':
      return { body: `a=${'x'.repeat(1_100_000)}`, type: 'application/x-www-form-urlencoded' }
    default:
      return {}
  }
}

/** A page that shows a stack trace, a driver's error or a file path gives the service away. */
const INTERNALS = /\n\s+at .+:\d+:\d+|PostgresError|ZodError|node_modules|\/work\/|\bSELECT\b.*\bFROM\b/

describe('every dashboard and hosted page under generated and hostile input', () => {
  it('walks a non-trivial route table', () => {
    expect(routes.filter((r) => r.path.startsWith('/dashboard')).length).toBeGreaterThan(40)
    expect(routes.filter((r) => !r.path.startsWith('/dashboard')).length).toBeGreaterThan(5)
  })

  it.each(routes.map((r) => [`${r.method} ${r.path}`, r] as const))(
    '%s answers a success, a redirect or a 4xx, never a 5xx',
    { timeout: 300_000 },
    async (_, route) => {
      let browser = await signedInBrowser()
      const params = fc.dictionary(fc.constantFrom('id', 'member', 'slug', 'token'), hostileId, {
        maxKeys: 2,
      })
      await fc.assert(
        fc.asyncProperty(
          fields(),
          encoding,
          tokenChoice,
          originChoice,
          extraHeaders,
          params,
          query,
          fc.boolean(),
          async (form, kind, token, origin, extra, hostile, search, withHeaders) => {
            const path = `${realPath(route.path, hostile)}${route.method === 'GET' ? search : ''}`
            const headers: Record<string, string> = withHeaders ? { ...extra } : {}
            const cookie = [...browser.cookies].map(([n, v]) => `${n}=${v}`).join('; ')
            if (cookie && !headers.cookie) headers.cookie = cookie
            if (origin === 'own') headers.origin = PUBLIC
            if (origin === 'foreign') headers.origin = 'https://evil.example'
            if (origin === 'null') headers.origin = 'null'
            const sent = route.method === 'POST' ? { ...form } : {}
            if (route.method === 'POST' && token !== 'none')
              sent.csrf = token === 'page' ? (browser.token ?? '') : 'garbage'
            const { body, type } = route.method === 'POST' ? bodyOf(kind, sent) : {}
            if (type && !(withHeaders && extra['content-type'])) headers['content-type'] = type
            const response = await app.requestRoot(path, {
              method: route.method,
              headers,
              ...(body === undefined ? {} : { body: body as string }),
            })
            requests++
            const text = await response.text()
            const where = `${route.method} ${path} (${kind}): ${response.status} ${text.slice(0, 300)}`
            expect(response.status, where).toBeLessThan(500)
            expect(INTERNALS.test(text), where).toBe(false)
            if (response.status >= 400 && response.headers.get('content-type')?.includes('json')) {
              const error = JSON.parse(text) as { code?: unknown; message?: unknown }
              expect(typeof error.code === 'string' && typeof error.message === 'string', where).toBe(true)
            }
            // A post that ended the session (sign-out, a password change) is followed by a new one.
            if (requests % 25 === 0 || response.headers.get('location')?.startsWith('/dashboard/login')) {
              browser = await signedInBrowser()
            }
            if (requests % 200 === 0) expect((await app.requestRoot('/health')).status).toBe(200)
          },
        ),
        { numRuns: RUNS_PER_ROUTE },
      )
      expect((await app.requestRoot('/health')).status).toBe(200)
    },
  )

  it('sent at least 5,000 requests', () => {
    expect(requests).toBeGreaterThanOrEqual(5000)
  })
})
