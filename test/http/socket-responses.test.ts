/**
 * What the API answers over a real socket, where @hono/node-server reads bodies from the
 * incoming message and writes responses without building fetch objects: the body size limit by
 * Content-Length, and the X-Request-Id header on every kind of answer.
 */
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { fresh, startSender } from '../support/sending.ts'

const LIMIT = 2048
const app = useTestApp({ bodyLimitBytes: LIMIT }, { listen: true })
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** A /send body whose JSON text is exactly `bytes` long. */
function sendBodyOfSize(bytes: number): string {
  const base = { to: 'reader@example.com', subject: 'Sized', text_body: '' }
  const text = JSON.stringify({ ...base, text_body: 'x'.repeat(bytes - JSON.stringify(base).length) })
  expect(Buffer.byteLength(text)).toBe(bytes)
  return text
}

describe('over a real socket', () => {
  it('POST /send of exactly the limit is sent, and echoes the caller X-Request-Id', async () => {
    const s = await startSender(app, 'socket')
    const res = await app.request('/send', {
      key: s.key,
      body: sendBodyOfSize(LIMIT),
      headers: { 'X-Request-Id': 'socket-send-1' },
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-request-id')).toBe('socket-send-1')
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    expect(await res.json()).toEqual(fresh(s.from))
    expect(s.sink.messages).toHaveLength(1)
  })

  it('one byte over the limit by Content-Length: 413 PAYLOAD_TOO_LARGE with a request id, nothing sent', async () => {
    const s = await startSender(app, 'socket-large')
    const res = await app.request('/send', { key: s.key, body: sendBodyOfSize(LIMIT + 1) })
    expect(res.status).toBe(413)
    expect(res.headers.get('x-request-id')).toMatch(UUID)
    expect(await res.json()).toEqual({ code: 'PAYLOAD_TOO_LARGE', message: expect.any(String) })
    expect(s.sink.messages).toHaveLength(0)
  })

  it('carries X-Request-Id on a 401, a validation 400 and a 404 too', async () => {
    const s = await startSender(app, 'socket-errors')
    const unauthorized = await app.request('/send', { body: sendBodyOfSize(100) })
    const invalid = await app.request('/send', {
      key: s.key,
      body: { to: 'x' },
      headers: { 'X-Request-Id': 'socket-400' },
    })
    const missing = await app.request('/nope', { key: s.key })
    expect([unauthorized.status, invalid.status, missing.status]).toEqual([401, 400, 404])
    expect(unauthorized.headers.get('x-request-id')).toMatch(UUID)
    expect(invalid.headers.get('x-request-id')).toBe('socket-400')
    expect(missing.headers.get('x-request-id')).toMatch(UUID)
  })
})
