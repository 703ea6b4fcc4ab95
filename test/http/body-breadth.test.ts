/**
 * Breadth is bounded as well as depth. A JSON body holding more keys and
 * array elements than the service takes answers the validation body before it is parsed (what
 * follows the bound is never read: there it is not even JSON), and each operation has a body
 * limit that fits it. Each limit on both sides.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { MAX_JSON_OBJECT_KEYS, SMALL_JSON_BODY_BYTES } from '../../src/http/json-body.ts'
import { jsonTextExcess } from '../../src/http/json-text.ts'
import { MAX_FORM_FIELDS, PUBLIC_BODY_LIMIT_BYTES } from '../../src/net/page-app.ts'
import { useTestApp } from '../support/app.ts'
import { signedIn, textOf } from '../support/dashboard.ts'
import { validationBody } from '../support/matchers.ts'
import { type Sender, startSender } from '../support/sending.ts'

const app = useTestApp()
let sender: Sender

beforeAll(async () => {
  sender = await startSender(app, 'breadth', { plan: 'pro' })
})

async function reply(path: string, body: string, method = 'POST') {
  const response = await app.request(path, { method, key: sender.key, body })
  return { status: response.status, body: await response.json() }
}

const tooBroad = { status: 400, body: validationBody([{ path: [], code: 'too_big' }]) }
const MAIL = '"to":"reader@example.com","subject":"Wide","text_body":"Hi"'
/** `count` items, each `item`, comma-separated. */
const items = (count: number, item: (i: number) => string) =>
  Array.from({ length: count }, (_, i) => item(i)).join(',')

describe('keys and array elements, counted while the text is read', () => {
  it('counts keys and elements at any depth, keys per object, and nothing inside strings', () => {
    const excess = (text: string, maxValues: number, maxKeys = 100, maxDepth = 64) =>
      jsonTextExcess(text, { maxDepth, maxValues, maxKeys })
    expect(excess('{"a":1,"b":[1,2,{"c":[]}]}', 6)).toBeUndefined()
    expect(excess('{"a":1,"b":[1,2,{"c":[]}]}', 5)).toBe('values')
    expect(excess('[{}, [], [ ], ""]', 4)).toBeUndefined()
    expect(excess('["a,b,c,[", "\\",{"]', 2)).toBeUndefined()
    expect(excess('["a,b,c,[", "\\",{"]', 1)).toBe('values')
    expect(excess('[[[]]]', 100, 100, 2)).toBe('depth')
    // Two keys in each object, four elements in the array: within 2 keys an object.
    expect(excess('[{"a":1,"b":2},{"a":1,"b":[0,0,0]},0,0]', 100, 2)).toBeUndefined()
    expect(excess('[0,0,0,{"a":1,"b":2,"c":3}]', 100, 2)).toBe('keys')
  })

  it(`refuses /send holding one object of 600,000 keys (7 MB) before parsing it`, async () => {
    const body = `{${MAIL},${items(600_000, (i) => `"key${i}":0`)}, and what follows is not JSON`
    expect(body.length).toBeGreaterThan(7_000_000)
    expect(await reply('/send', body)).toEqual(tooBroad)
    expect(sender.sink.messages).toHaveLength(0)
  })

  it('refuses a top-level array of 1,000,000 {} on every operation that takes a body', async () => {
    const body = `[${items(1_000_000, () => '{}')}, not JSON either`
    for (const path of ['/send', '/enqueue', '/send/batch', '/templates', '/audiences/1/members']) {
      expect(await reply(path, body), path).toEqual(tooBroad)
    }
  })

  it(`takes ${MAX_JSON_OBJECT_KEYS} keys in an object and refuses one more`, async () => {
    // The mail's three keys and the rest unknown (ignored) ones.
    const body = (keys: number) => `{${MAIL},${items(keys - 3, (i) => `"extra${i}":0`)}}`
    expect((await reply('/send', body(MAX_JSON_OBJECT_KEYS))).status).toBe(200)
    expect(await reply('/send', body(MAX_JSON_OBJECT_KEYS + 1))).toEqual(tooBroad)
  })

  it('takes as many as the service takes (a body as sent), and refuses one more', async () => {
    const { jsonMaxValues } = app.services.config
    // The mail's three keys and `padding` make four values; the rest are padding's elements.
    const body = (values: number) => `{${MAIL},"padding":[${items(values - 4, () => '0')}]}`
    const sent = sender.sink.messages.length
    expect((await reply('/send', body(jsonMaxValues))).status).toBe(200)
    expect(await reply('/send', body(jsonMaxValues + 1))).toEqual(tooBroad)
    expect(sender.sink.messages).toHaveLength(sent + 1)
  })
})

describe('each operation has a body limit that fits it', () => {
  /** `json` padded with spaces to exactly `bytes`. */
  const padded = (json: string, bytes: number) => json + ' '.repeat(bytes - Buffer.byteLength(json))
  const tooLarge = { status: 413, body: { code: 'PAYLOAD_TOO_LARGE', message: expect.any(String) } }

  it(`takes audiences and webhook endpoints up to ${SMALL_JSON_BODY_BYTES / 1024} KiB`, async () => {
    const audience = '{"name":"Sized"}'
    const webhook = '{"url":"http://127.0.0.1:9/hook","events":["email.sent"]}'
    expect((await reply('/audiences', padded(audience, SMALL_JSON_BODY_BYTES))).status).toBe(201)
    expect(await reply('/audiences', padded(audience, SMALL_JSON_BODY_BYTES + 1))).toEqual(tooLarge)
    expect((await reply('/webhooks', padded(webhook, SMALL_JSON_BODY_BYTES))).status).toBe(201)
    expect(await reply('/webhooks', padded(webhook, SMALL_JSON_BODY_BYTES + 1))).toEqual(tooLarge)
    expect(await reply('/audiences/1', padded(audience, SMALL_JSON_BODY_BYTES + 1), 'PUT')).toEqual(tooLarge)
  })

  it("takes templates and mail up to the service's limit", async () => {
    const template = '{"name":"Big","subject":"s","text_body":"t"}'
    expect((await reply('/templates', padded(template, SMALL_JSON_BODY_BYTES * 4))).status).toBe(201)
    expect((await reply('/send', padded(`{${MAIL}}`, SMALL_JSON_BODY_BYTES * 4))).status).toBe(200)
  })

  it(`takes the dashboard's sign-in, open to anyone, up to ${PUBLIC_BODY_LIMIT_BYTES / 1024} KiB`, async () => {
    const form = (bytes: number) => `email=a%40example.com&password=${'x'.repeat(bytes - 31)}`
    const signIn = (bytes: number) =>
      app.requestRoot('/dashboard/login', {
        method: 'POST',
        body: form(bytes),
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://localhost' },
      })
    expect(form(PUBLIC_BODY_LIMIT_BYTES)).toHaveLength(PUBLIC_BODY_LIMIT_BYTES)
    expect((await signIn(PUBLIC_BODY_LIMIT_BYTES)).status).not.toBe(413)
    expect((await signIn(PUBLIC_BODY_LIMIT_BYTES + 1)).status).toBe(413)
  })
})

describe('forms of the pages', () => {
  /** A form of `count` fields once the client adds its form token: a name and fillers. */
  function form(count: number, multipart: boolean): Record<string, string> | FormData {
    const fields: Record<string, string> = { name: 'Counted' }
    for (let i = 2; i < count; i++) fields[`filler${i}`] = 'x'
    if (!multipart) return fields
    const data = new FormData()
    for (const [name, value] of Object.entries(fields)) data.set(name, value)
    return data
  }

  it(`takes ${MAX_FORM_FIELDS} fields in the dashboard, urlencoded or multipart, and refuses one more unparsed`, async () => {
    const { browser } = await signedIn(app)
    const refusal = `at most ${MAX_FORM_FIELDS} fields`
    for (const multipart of [false, true]) {
      const within = await browser.post('/dashboard/keys', form(MAX_FORM_FIELDS, multipart))
      expect(textOf(within.html)).not.toContain(refusal)
      const over = await browser.post('/dashboard/keys', form(MAX_FORM_FIELDS + 1, multipart))
      expect(over.status).toBe(400)
      expect(textOf(over.html)).toContain(refusal)
    }
  })
})
