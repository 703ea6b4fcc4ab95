/**
 * Every request does bounded work and gets a bounded answer (docs/decisions.md, "Limits on
 * every request"); hostile bodies answer 4xx, never 500. Each limit on both sides.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { humanText, validationBody } from '../support/matchers.ts'
import { type Sender, startSender } from '../support/sending.ts'

const app = useTestApp()

let pro: Sender
let free: Sender
beforeAll(async () => {
  pro = await startSender(app, 'bounds-pro', { plan: 'pro' })
  free = await startSender(app, 'bounds-free')
})

async function reply(path: string, body: unknown, key = pro.key, method = 'POST') {
  const response = await app.request(path, { method, key, body })
  const text = await response.text()
  return { status: response.status, size: text.length, body: JSON.parse(text) }
}

const mail = (fields: Record<string, unknown> = {}) => ({
  to: 'reader@example.com',
  subject: 'Hello',
  text_body: 'Hi',
  ...fields,
})

const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)
/** A JSON body whose `field` holds arrays nested `levels` deep (the body itself is level 1). */
const deepBody = (field: string, levels: number) => `{"${field}":${nested(levels - 1)}}`

async function audience(): Promise<number> {
  const created = await reply('/audiences', { name: 'Bounded' })
  expect(created.status).toBe(201)
  return created.body.audience.id
}

describe('addresses: at most 254 characters, local part at most 64', () => {
  const local = (n: number) => 'a'.repeat(n)
  const domainOf = (n: number) => `${'d'.repeat(n - 4)}.com` // n characters
  const at64 = `${local(64)}@example.com`
  const at65 = `${local(65)}@example.com`
  // 64 + 1 + 189 = 254, and 255 with a longer domain.
  const long254 = `${local(64)}@${'d'.repeat(60)}.${'e'.repeat(60)}.${domainOf(67)}`
  const long255 = `${local(64)}@${'d'.repeat(60)}.${'e'.repeat(60)}.${domainOf(68)}`

  it('counts the way RFC 5321 does', () => {
    expect(long254).toHaveLength(254)
    expect(long255).toHaveLength(255)
  })

  it('takes 64 and 254 and refuses 65 and 255 with the validation body', async () => {
    // (The test SMTP server has address rules of its own: /enqueue accepts without it.)
    for (const to of [at64, long254]) expect((await reply('/enqueue', mail({ to }))).status).toBe(200)
    for (const to of [at65, long255]) {
      expect(await reply('/send', mail({ to: [to] }), free.key)).toMatchObject({
        status: 400,
        body: { success: false, error: { name: 'ZodError', issues: expect.any(Array) } },
      })
      // The comma-separated form is checked by the same rule.
      expect((await reply('/send', mail({ to: `ok@example.com, ${to}` }), free.key)).status).toBe(400)
    }
  })

  it('refuses a 20,000-character local part everywhere an address goes, quoting it cut short', async () => {
    const huge = `${local(20_000)}@example.com`
    const send = await reply('/send', mail({ to: huge }), free.key)
    expect(send.status).toBe(400)
    expect(send.size).toBeLessThan(2000)
    expect(free.sink.messages).toHaveLength(0)
    for (const [path, body] of [
      ['/enqueue', mail({ cc: [huge] })],
      ['/send/batch', { template: { subject: 's', text_body: 't' }, recipients: [huge] }],
      ['/send/batch', { emails: [{ to: huge, subject: 's', text_body: 't' }] }],
      ['/send', mail({ from: huge })],
    ] as const) {
      const answer = await reply(path, body, path === '/send' ? free.key : pro.key)
      expect(answer.status).toBe(400)
      expect(answer.body.success).toBe(false)
    }
    const audienceId = await audience()
    const members = await reply(`/audiences/${audienceId}/members`, { members: [{ email: huge }] })
    expect(members.status).toBe(400)
    const ok = await reply(`/audiences/${audienceId}/members`, {
      members: [{ email: at64 }, { email: long254 }],
    })
    expect(ok.body).toMatchObject({ inserted: 2 })
  })
})

describe('count limits come before the items are checked', () => {
  it('answers TOO_MANY_RECIPIENTS for a million commas, small and at once', async () => {
    const answer = await reply('/send', mail({ cc: ','.repeat(1_000_000) }), free.key)
    expect(answer).toMatchObject({
      status: 400,
      body: { code: 'TOO_MANY_RECIPIENTS', details: { limit: 10, used: 1_000_002 } },
    })
    expect(answer.size).toBeLessThan(1000)
  })

  it('answers TOO_MANY_RECIPIENTS for 150,000 invalid `to` on /send and /enqueue', async () => {
    // (Within the keys and elements a body may hold: beyond them, see body-breadth.test.ts.)
    const to = Array(150_000).fill('not an address')
    for (const [path, key] of [
      ['/send', free.key],
      ['/enqueue', pro.key],
    ] as const) {
      expect(await reply(path, mail({ to }), key)).toMatchObject({
        status: 400,
        body: { code: 'TOO_MANY_RECIPIENTS', details: { limit: 10, used: 150_000 } },
      })
    }
  })

  it('counts 10 recipients as fine and 11 as too many, before looking at them', async () => {
    const ten = Array.from({ length: 10 }, (_, i) => `r${i}@example.com`)
    expect(
      (await reply('/send', mail({ to: ten.slice(0, 4), cc: ten.slice(4, 8), bcc: ten.slice(8) }), free.key))
        .status,
    ).toBe(200)
    const eleven = [...ten.slice(0, 9).map(() => 'bad'), 'x', 'y']
    expect(await reply('/send', mail({ to: eleven }), free.key)).toMatchObject({
      status: 400,
      body: { code: 'TOO_MANY_RECIPIENTS', details: { used: 11 } },
    })
  })

  it('answers BATCH_TOO_LARGE for 150,000 invalid recipients and 1001 emails; 1000 is the limit', async () => {
    const template = { subject: 's', text_body: 't' }
    const flood = Array.from({ length: 150_000 }, (_, i) => `invalid ${i}`)
    expect(await reply('/send/batch', { template, recipients: flood })).toMatchObject({
      status: 400,
      body: { code: 'BATCH_TOO_LARGE', details: { limit: 1000, used: 150_000 } },
    })
    const email = { to: 'x', subject: '', text_body: 5 }
    expect(await reply('/send/batch', { emails: Array(1001).fill(email) })).toMatchObject({
      status: 400,
      body: { code: 'BATCH_TOO_LARGE', details: { limit: 1000, used: 1001 } },
    })
    // 1000 items are validated one by one: a bounded list of issues.
    const invalid = await reply('/send/batch', { emails: Array(1000).fill(email) })
    expect(invalid.status).toBe(400)
    expect(invalid.body.error.issues).toHaveLength(100)
  })

  it('checks only the unique addresses of a long list with duplicates, and still takes it', async () => {
    const template = { subject: 's', text_body: 't' }
    const invalidDuplicates = await reply('/send/batch', {
      template,
      recipients: Array(150_000).fill('nope'),
    })
    expect(invalidDuplicates.status).toBe(400)
    expect(invalidDuplicates.body.error.issues.length).toBeLessThanOrEqual(2)
    const repeated = Array.from({ length: 3000 }, (_, i) => `Reader${i % 1000}@example.com`)
    expect(await reply('/send/batch', { template, recipients: repeated })).toMatchObject({
      status: 200,
      body: { total_count: 1000 },
    })
  })

  it('lists at most 100 issues in a validation body', async () => {
    const audienceId = await audience()
    const members = Array.from({ length: 10_000 }, (_, i) => ({ email: `bad ${i}` }))
    const answer = await reply(`/audiences/${audienceId}/members`, { members })
    expect(answer.status).toBe(400)
    expect(answer.body.error.issues).toHaveLength(100)
    expect(answer.size).toBeLessThan(20_000)
    const tooMany = await reply(`/audiences/${audienceId}/members`, { members: [...members, { email: 'x' }] })
    expect(tooMany.status).toBe(400)
    expect(tooMany.body.error.issues).toEqual([
      expect.objectContaining({ path: ['members'], code: 'too_big' }),
    ])
  })
})

describe('JSON nesting', () => {
  const operations: [string, string, string][] = [
    ['POST', '/send', 'to'],
    ['POST', '/enqueue', 'to'],
    ['POST', '/send/batch', 'recipients'],
    ['POST', '/templates', 'name'],
    ['POST', '/audiences', 'name'],
  ]

  it('answers the validation body for 65 levels and 7,000 levels, on every body operation', async () => {
    const audienceId = await audience()
    const templateId = (await reply('/templates', { name: 'n', subject: 's', text_body: 't' })).body.template
      .id
    const all: [string, string, string][] = [
      ...operations,
      ['PUT', `/audiences/${audienceId}`, 'name'],
      ['POST', `/audiences/${audienceId}/members`, 'members'],
      ['PUT', `/templates/${templateId}`, 'name'],
    ]
    for (const [method, path, field] of all) {
      // (30,000 levels still fit the audiences' 64 KiB body limit.)
      for (const levels of [65, 7000, 30_000]) {
        const answer = await reply(path, deepBody(field, levels), pro.key, method)
        expect(answer, `${method} ${path} at ${levels}`).toEqual({
          status: 400,
          size: expect.any(Number),
          body: validationBody([{ path: [], code: 'too_big' }]),
        })
      }
      // 64 levels are read (and refused for what they hold, not for their depth).
      const at64 = await reply(path, deepBody(field, 64), pro.key, method)
      expect(at64.status).toBe(400)
      expect(at64.body.error.issues[0].path[0]).toBe(field)
    }
  })

  it('keeps brackets inside strings out of the count', async () => {
    const answer = await reply('/send', mail({ subject: `[{${'['.repeat(200)}` }), free.key)
    expect(answer.status).toBe(200)
  })

  it('still answers INVALID_JSON for malformed JSON, an empty body among it', async () => {
    for (const text of ['{"to": [', '', ' ']) {
      expect(await reply('/send', text, free.key)).toMatchObject({
        status: 400,
        body: { code: 'INVALID_JSON' },
      })
    }
  })
})

describe('payloads: at most 16 KiB as JSON text and 32 levels', () => {
  /** A payload whose JSON text is exactly `bytes` long. */
  const payloadOf = (bytes: number) => ({ v: 'x'.repeat(bytes - '{"v":""}'.length) })
  const deepPayload = (levels: number) => {
    let value: unknown = 'leaf'
    for (let i = 0; i < levels; i++) value = { n: value }
    return value as Record<string, unknown>
  }

  it('takes 16384 bytes and 32 levels; refuses one more of either, and 9 MB', async () => {
    const audienceId = await audience()
    const add = (payload: unknown, email = 'p@example.com') =>
      reply(`/audiences/${audienceId}/members`, { members: [{ email, payload }] })
    expect(JSON.stringify(payloadOf(16_384))).toHaveLength(16_384)
    expect((await add(payloadOf(16_384), 'a@example.com')).status).toBe(201)
    expect((await add(deepPayload(32), 'b@example.com')).status).toBe(201)
    for (const payload of [payloadOf(16_385), deepPayload(33), payloadOf(9_000_000)]) {
      expect(await add(payload)).toMatchObject({
        status: 400,
        body: {
          error: { issues: [expect.objectContaining({ path: ['members', 0, 'payload'], code: 'custom' })] },
        },
      })
    }
    // Multi-byte characters count as UTF-8 bytes.
    expect((await add({ v: 'é'.repeat(8190) })).status).toBe(400)
  })

  it('keeps a page of 1000 members at the largest payload readable', async () => {
    const audienceId = await audience()
    for (let part = 0; part < 4; part++) {
      const members = Array.from({ length: 250 }, (_, i) => ({
        email: `big${part}-${i}@example.com`,
        payload: payloadOf(16_384),
      }))
      expect((await reply(`/audiences/${audienceId}/members`, { members })).status).toBe(201)
    }
    const response = await app.request(`/audiences/${audienceId}/members?limit=1000`, { key: pro.key })
    expect(response.status).toBe(200)
    const page = await response.json()
    expect(page.members).toHaveLength(1000)
    expect(page.pagination).toEqual({ total: 1000, limit: 1000, offset: 0, hasMore: false })
  })
})

describe('sizes of subjects, bodies and names', () => {
  const BODY = 524_288

  it('takes a template body of 512 Ki characters and refuses one more, and 9 MB', async () => {
    const create = (fields: Record<string, unknown>) =>
      reply('/templates', { name: 'Big', subject: 'Big', ...fields })
    expect((await create({ html_body: 'x'.repeat(BODY) })).status).toBe(201)
    for (const fields of [
      { html_body: 'x'.repeat(BODY + 1) },
      { text_body: 'x'.repeat(BODY + 1) },
      { text_body: 'x'.repeat(9_000_000) },
    ]) {
      expect(await create(fields)).toMatchObject({ status: 400, body: { success: false } })
    }
    const saved = await create({ text_body: 't' })
    const update = await reply(
      `/templates/${saved.body.template.id}`,
      { text_body: 'x'.repeat(BODY + 1) },
      pro.key,
      'PUT',
    )
    expect(update.status).toBe(400)
  })

  it('bounds the subject at 998 and bodies at 512 Ki on /send, /enqueue and batches', async () => {
    expect(
      (await reply('/send', mail({ subject: 's'.repeat(998), text_body: 'x'.repeat(BODY) }), free.key))
        .status,
    ).toBe(200)
    for (const [path, body] of [
      ['/send', mail({ subject: 's'.repeat(999) })],
      ['/enqueue', mail({ html_body: 'x'.repeat(BODY + 1) })],
      [
        '/send/batch',
        { template: { subject: 's'.repeat(999), text_body: 't' }, recipients: ['a@example.com'] },
      ],
      ['/send/batch', { emails: [{ to: 'a@example.com', subject: 's', text_body: 'x'.repeat(BODY + 1) }] }],
      [
        '/send/batch',
        { name: 'n'.repeat(256), emails: [{ to: 'a@example.com', subject: 's', text_body: 't' }] },
      ],
    ] as const) {
      expect((await reply(path, body, path === '/send' ? free.key : pro.key)).status, path).toBe(400)
    }
    const named = await reply('/send/batch', {
      name: 'n'.repeat(255),
      emails: [{ to: 'a@example.com', subject: 's', text_body: 't' }],
    })
    expect(named.status).toBe(200)
  })
})

describe('text PostgreSQL cannot store', () => {
  const LONE = 'x\ud800y'

  it('answers the validation body for a lone surrogate in a subject on /send, /enqueue and batches', async () => {
    for (const [path, body, key] of [
      ['/send', mail({ subject: LONE }), free.key],
      ['/enqueue', mail({ subject: LONE }), pro.key],
      [
        '/send/batch',
        { template: { subject: LONE, text_body: 't' }, recipients: ['a@example.com'] },
        pro.key,
      ],
      ['/send/batch', { emails: [{ to: 'a@example.com', subject: LONE, text_body: 't' }] }, pro.key],
      ['/templates', { name: 'n', subject: LONE, text_body: 't' }, pro.key],
    ] as const) {
      const answer = await reply(path, body, key)
      expect(answer.status, path).toBe(400)
      expect(answer.body.success).toBe(false)
    }
  })

  it('answers the validation body for NUL and lone surrogates in payload keys and values', async () => {
    const audienceId = await audience()
    for (const payload of [
      { v: LONE },
      { [LONE]: 'v' },
      { 'k\u0000': 'v' },
      { v: 'a\u0000b' },
      { n: { '\udc00': 1 } },
    ]) {
      const answer = await reply(`/audiences/${audienceId}/members`, {
        members: [{ email: 'a@example.com', payload }],
      })
      expect(answer).toMatchObject({ status: 400, body: { success: false, error: { name: 'ZodError' } } })
    }
    // A well-formed pair and an escaped NUL-free text go in.
    const fine = await reply(`/audiences/${audienceId}/members`, {
      members: [{ email: 'a@example.com', payload: { '\ud83d\ude00': 'smile \ud83d\ude00' } }],
    })
    expect(fine).toMatchObject({ status: 201, body: { inserted: 1, message: humanText } })
  })
})
