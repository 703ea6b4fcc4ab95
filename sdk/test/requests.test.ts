/**
 * Unit tests of the SDK's requests: typed success bodies, the headers and URLs of every
 * operation, and the raw client, with a fake `fetch` that records the requests and answers
 * canned responses. End-to-end tests against the real server live in test/sdk*.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { createClient, type Template } from '../src/index.js'
import { BASE, clientAnswering, EMAIL, fakeFetch, json, KEY, TEMPLATE } from './fake-fetch.js'

describe('success bodies and requests', () => {
  it('returns the typed success body', async () => {
    const { client } = clientAnswering(json(201, { success: true, template: TEMPLATE }))
    const created = await client.templates.create({
      name: 'Renewal reminder',
      subject: 'Hi',
      text_body: 'Hello',
    })
    expect(created.success).toBe(true)
    const template: Template = created.template
    expect(template).toEqual(TEMPLATE)
  })

  it('returns the send response', async () => {
    const body = {
      success: true,
      messageId: '<a@b>',
      outboxId: 1337,
      from: 'billing@acme.example',
      message: 'ok',
    }
    const { client, requests } = clientAnswering(json(200, body))
    const sent = await client.send(EMAIL)
    expect(sent.outboxId).toBe(1337)
    expect(sent).toEqual(body)
    const request = requests[0] as Request
    expect(request.method).toBe('POST')
    expect(request.url).toBe(`${BASE}/send`)
    expect(request.headers.get('content-type')).toBe('application/json')
    expect(await request.json()).toEqual(EMAIL)
    expect(request.headers.has('idempotency-key')).toBe(false)
  })

  it('sends the Idempotency-Key header', async () => {
    const { client, requests } = clientAnswering(json(200, { success: true, outboxId: 1, message: 'ok' }))
    await client.send(EMAIL, { idempotencyKey: '7f9c2ba4-e88f-4a1e-9c0b-2d6b5f1e3a10' })
    expect(requests[0]?.headers.get('Idempotency-Key')).toBe('7f9c2ba4-e88f-4a1e-9c0b-2d6b5f1e3a10')
  })

  it('sends the bearer header on every request, and extra headers', async () => {
    const fake = fakeFetch(() => json(200, { success: true, templates: [] }))
    const client = createClient({
      baseUrl: BASE,
      apiKey: KEY,
      fetch: fake.fetch,
      headers: { 'X-Trace': 'abc' },
    })
    await client.templates.list()
    await client.templates.list({ headers: { 'X-Call': '1' } })
    await client.raw.GET('/templates')
    expect(fake.requests).toHaveLength(3)
    for (const request of fake.requests) {
      expect(request.headers.get('Authorization')).toBe(`Bearer ${KEY}`)
      expect(request.headers.get('X-Trace')).toBe('abc')
    }
    expect(fake.requests[1]?.headers.get('X-Call')).toBe('1')
  })

  it('keeps the bearer header even if extra headers carry another Authorization', async () => {
    const fake = fakeFetch(() => json(200, { success: true, templates: [] }))
    const client = createClient({
      baseUrl: BASE,
      apiKey: KEY,
      fetch: fake.fetch,
      headers: { authorization: 'Basic xyz' },
    })
    await client.templates.list()
    expect(fake.requests[0]?.headers.get('Authorization')).toBe(`Bearer ${KEY}`)
  })

  it.each([BASE, `${BASE}/`, `${BASE}//`])('baseUrl %s hits <base>/templates', async (baseUrl) => {
    const fake = fakeFetch(() => json(200, { success: true, templates: [] }))
    const client = createClient({ baseUrl, apiKey: KEY, fetch: fake.fetch })
    const list = await client.templates.list()
    expect(list.templates).toEqual([])
    expect(fake.requests[0]?.url).toBe('http://127.0.0.1:3000/v1/templates')
    expect(fake.requests[0]?.method).toBe('GET')
    expect(client.baseUrl).toBe(BASE)
  })

  it('builds the path, query and method of every operation', async () => {
    const fake = fakeFetch(() => json(200, { success: true }))
    const client = createClient({ baseUrl: BASE, apiKey: KEY, fetch: fake.fetch })
    await client.enqueue(EMAIL)
    await client.batches.create({ emails: [{ to: 'a@example.com', subject: 's', html_body: '<p>x</p>' }] })
    await client.batches.get(42)
    await client.batches.delete(42)
    await client.audiences.list()
    await client.audiences.create({ name: 'Customers' })
    await client.audiences.get(7)
    await client.audiences.update(7, { name: 'Paying customers' })
    await client.audiences.delete(7)
    await client.audiences.members.list(7, { limit: 50, offset: 100 })
    await client.audiences.members.list(7)
    await client.audiences.members.add(7, {
      members: [{ email: 'ada@example.com', payload: { first_name: 'Ada' } }],
    })
    await client.audiences.members.delete(7, 501)
    await client.templates.list()
    await client.templates.get(12)
    await client.templates.update(12, { subject: 'New' })
    await client.templates.delete(12)
    const seen = fake.requests.map((request) => `${request.method} ${request.url.slice(BASE.length)}`)
    expect(seen).toEqual([
      'POST /enqueue',
      'POST /send/batch',
      'GET /batches/42',
      'DELETE /batches/42',
      'GET /audiences',
      'POST /audiences',
      'GET /audiences/7',
      'PUT /audiences/7',
      'DELETE /audiences/7',
      'GET /audiences/7/members?limit=50&offset=100',
      'GET /audiences/7/members',
      'POST /audiences/7/members',
      'DELETE /audiences/7/members/501',
      'GET /templates',
      'GET /templates/12',
      'PUT /templates/12',
      'DELETE /templates/12',
    ])
    expect(await fake.requests[11]?.json()).toEqual({
      members: [{ email: 'ada@example.com', payload: { first_name: 'Ada' } }],
    })
  })

  it('gives the raw client {data, error, response} without throwing', async () => {
    const { client } = clientAnswering(json(404, { error: 'Template not found' }))
    const { data, error, response } = await client.raw.GET('/templates/{id}', { params: { path: { id: 5 } } })
    expect(data).toBeUndefined()
    expect(error).toEqual({ error: 'Template not found' })
    expect(response.status).toBe(404)
  })

  it('rejects a missing baseUrl or apiKey', () => {
    expect(() => createClient({ baseUrl: '', apiKey: KEY })).toThrow(TypeError)
    expect(() => createClient({ baseUrl: BASE, apiKey: '' })).toThrow(TypeError)
  })
})
