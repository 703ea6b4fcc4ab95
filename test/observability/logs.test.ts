import { describe, expect, it } from 'vitest'
import { createLogger } from '../../src/log.ts'
import { useTestApp } from '../support/app.ts'
import { captureLogs, INFO, type LogLine, WARN } from '../support/log-capture.ts'
import { email } from '../support/queue.ts'
import { startSender } from '../support/sending.ts'

const logs = captureLogs()
const app = useTestApp({}, { log: logs.log })

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The lines written since `from` (an index into the captured lines). */
const since = (from: number) => logs.lines.slice(from)
const accessLines = (lines: LogLine[]) => lines.filter((l) => l.msg === 'request')

async function until<T>(probe: () => T | undefined, what: string, limitMs = 15_000): Promise<T> {
  const deadline = Date.now() + limitMs
  for (;;) {
    const found = probe()
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe('the access log and request ids', () => {
  it('writes one line per request with method, route, status, duration, account and request id, never the key or the body', async () => {
    const sender = await startSender(app, 'logged')
    const from = logs.lines.length
    const res = await app.request('/send', {
      key: sender.key,
      body: { to: 'reader@example.com', subject: 'Secret plans', text_body: 'the body text 0451' },
      headers: { 'X-Request-Id': 'order-4711.retry:2' },
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-request-id')).toBe('order-4711.retry:2')
    const access = accessLines(since(from))
    expect(access).toHaveLength(1)
    expect(access[0]).toMatchObject({
      level: INFO,
      method: 'POST',
      route: '/v1/send',
      status: 200,
      durationMs: expect.any(Number),
      accountId: sender.accountId,
      requestId: 'order-4711.retry:2',
    })
    const text = logs.text()
    expect(text).not.toContain(sender.key)
    expect(text).not.toContain('the body text 0451')
  })

  it('makes an id when none is given, or when the given one is unsafe or too long, and echoes it', async () => {
    for (const given of [undefined, 'two words', `x${'y'.repeat(128)}`, 'quote"and<angle>']) {
      const from = logs.lines.length
      const res = await app.requestRoot(
        '/health',
        given === undefined ? {} : { headers: { 'X-Request-Id': given } },
      )
      const id = res.headers.get('x-request-id')
      expect(id).toMatch(UUID)
      expect(accessLines(since(from))).toEqual([expect.objectContaining({ route: '/health', requestId: id })])
    }
  })

  it('names the route pattern, not the path; a path no route matches is "unmatched"', async () => {
    const sender = await startSender(app, 'routes', { plan: 'pro' })
    const from = logs.lines.length
    await app.request('/audiences/12345', { key: sender.key })
    await app.request('/no/such/thing', { key: sender.key })
    expect(accessLines(since(from)).map((l) => [l.route, l.status])).toEqual([
      ['/v1/audiences/:id', 404],
      ['unmatched', 404],
    ])
  })

  it('logs a refused SMTP attempt at warn with the outbox id, connection, account and request id', async () => {
    const sender = await startSender(app, 'refused', {
      behaviour: { rejectRecipients: ['nobody@example.com'] },
    })
    const from = logs.lines.length
    const res = await app.request('/send', {
      key: sender.key,
      body: { to: 'nobody@example.com', subject: 'x', text_body: 'y' },
      headers: { 'X-Request-Id': 'refused-1' },
    })
    expect(res.status).toBe(500)
    const warned = since(from).filter((l) => l.msg === 'SMTP attempt failed')
    expect(warned).toEqual([
      expect.objectContaining({
        level: WARN,
        connectionId: sender.connectionId,
        accountId: sender.accountId,
        outboxId: expect.any(Number),
        requestId: 'refused-1',
        reason: expect.stringContaining('550'),
      }),
    ])
  })

  it('carries the request id into the queued work it created: the worker logs a failed attempt and a later success under it', async () => {
    const sender = await startSender(app, 'queued', {
      plan: 'pro',
      behaviour: { rejectData: { code: 451, message: '4.3.0 Try again later' } },
    })
    const from = logs.lines.length
    const res = await app.request('/enqueue', {
      key: sender.key,
      body: email(),
      headers: { 'X-Request-Id': 'enqueue-77' },
    })
    const { outboxId } = (await res.json()) as { outboxId: number }
    const [stored] = await app.services.sql<{ request_id: string }[]>`
      select request_id from outbox where id = ${outboxId}`
    expect(stored?.request_id).toBe('enqueue-77')

    await app.worker()
    const failure = await until(
      () => since(from).find((l) => l.msg === 'SMTP attempt failed' && l.outboxId === outboxId),
      'the failed attempt',
    )
    expect(failure).toMatchObject({
      level: WARN,
      requestId: 'enqueue-77',
      connectionId: sender.connectionId,
      accountId: sender.accountId,
    })
    sender.sink.setBehaviour({ rejectData: undefined })
    const success = await until(
      () => since(from).find((l) => typeof l.msg === 'string' && l.msg.startsWith('sent at attempt 2,')),
      'the success after a retry',
    )
    expect(success).toMatchObject({
      level: INFO,
      requestId: 'enqueue-77',
      outboxId,
      connectionId: sender.connectionId,
      earlier: 1,
    })
    await app.stopWorkers()
  })
})

describe('LOG_FORMAT=pretty', () => {
  it('writes readable lines, not JSON, with the request id', async () => {
    const chunks: string[] = []
    const { Writable } = await import('node:stream')
    const log = createLogger(
      'info',
      'pretty',
      new Writable({
        write(chunk, _e, done) {
          chunks.push(chunk.toString())
          done()
        },
      }),
    )
    const { withRequestId } = await import('../../src/log.ts')
    withRequestId('pretty-1', () => log.info({ route: '/v1/send' }, 'request'))
    const text = chunks.join('')
    expect(text).toContain('request')
    expect(text).toContain('pretty-1')
    expect(() => JSON.parse(text)).toThrow()
  })
})

describe('database errors in the logs', () => {
  it('keep their code and routine but never the text they quote (PostgreSQL detail, where, the value)', async () => {
    const secret = 'Subject of the secret plan QX-0452-ZK'
    let failure: unknown
    try {
      // Sent as text: a jsonb parameter would be serialized as a JSON string, which parses.
      await app.services.sql`select (${`{"subject": "${secret}", oops}`}::text)::jsonb`
    } catch (error) {
      failure = error
    }
    // The error as PostgreSQL gives it quotes the payload, so the test can fail.
    expect(JSON.stringify({ ...(failure as object) })).toContain(secret)
    const from = logs.lines.length
    logs.log.error({ err: failure }, 'unexpected failure')
    const [line] = since(from)
    expect(line).toMatchObject({
      err: { code: '22P02', routine: expect.any(String), message: expect.any(String) },
    })
    expect(JSON.stringify(line)).not.toContain('secret plan')
    // A marker no pid, time or line number of the log can contain by chance.
    expect(JSON.stringify(line)).not.toContain('QX-0452-ZK')
  })
})
