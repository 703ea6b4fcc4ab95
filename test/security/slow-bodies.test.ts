/**
 * Reading a body has a time limit, and no request, finished or not, holds
 * a file descriptor long enough to hurt others. Over real sockets: a body that stops arriving is
 * cut at its deadline with 408 and logged once, without a stack; the API's access log says what
 * the client got (408, or `aborted` when it left), never 500; one address holds a bounded
 * number of connections to the public pages while another still gets in.
 */
import net from 'node:net'
import { beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.ts'
import { PUBLIC_BODY_LIMIT_BYTES } from '../../src/net/page-app.ts'
import { bodyDeadlineMs, requestGuard } from '../../src/net/request-guard.ts'
import { useTestApp } from '../support/app.ts'
import { captureLogs, type LogLine } from '../support/log-capture.ts'
import { type Sender, startSender } from '../support/sending.ts'

const logs = captureLogs()
const PER_ADDRESS = 3
const app = useTestApp(
  { bodyTimeoutSeconds: 1, bodyMinBytesPerSecond: 64 * 1024, publicConnectionsPerAddress: PER_ADDRESS },
  { listen: true, log: logs.log },
)
let sender: Sender

beforeAll(async () => {
  sender = await startSender(app, 'slow-bodies')
})

interface Exchange {
  socket: net.Socket
  /** Everything the server wrote, once it closed the connection. */
  closed: Promise<string>
}

/** A request whose head and first `body` bytes go out; the rest is the test's to send, or never. */
function begin(
  path: string,
  headers: Record<string, string>,
  body = '',
  localAddress = '127.0.0.1',
): Exchange {
  const { hostname, port } = new URL(app.url)
  const socket = net.connect({ port: Number(port), host: hostname, localAddress })
  const lines = Object.entries({ host: 'localhost', ...headers }).map(([name, value]) => `${name}: ${value}`)
  socket.write(`POST ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${body}`)
  let answer = ''
  socket.on('data', (chunk) => {
    answer += chunk.toString('latin1')
  })
  const closed = new Promise<string>((resolve) => {
    socket.on('error', () => resolve(answer))
    socket.on('close', () => resolve(answer))
  })
  return { socket, closed }
}

const chunk = (text: string) => `${text.length.toString(16)}\r\n${text}\r\n`
const neverEndingForm = (localAddress?: string) =>
  begin(
    '/forms/no-such-form',
    { 'content-type': 'application/x-www-form-urlencoded', 'transfer-encoding': 'chunked' },
    chunk('name=Ada&message='),
    localAddress,
  )

async function until<T>(find: () => T | undefined | Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const found = await find()
    if (found !== undefined) return found
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error('never happened')
}

const withStack = (line: LogLine) => JSON.stringify(line).includes('"stack"')
const accessLine = (id: string) => () =>
  logs.lines.find((line) => line.msg === 'request' && line.requestId === id)

describe('a body has a deadline', () => {
  it('gives a public form 30 s at most and a 10 MiB API body a minute at most, by default', () => {
    const defaults = loadConfig({})
    const guard = requestGuard(defaults, () => true, PUBLIC_BODY_LIMIT_BYTES)
    expect(bodyDeadlineMs(guard, PUBLIC_BODY_LIMIT_BYTES)).toBeLessThanOrEqual(30_000)
    expect(bodyDeadlineMs(guard, defaults.bodyLimitBytes)).toBeLessThanOrEqual(60_000)
  })

  it('cuts a never-ending chunked form with 408, closes it, and logs it once without a stack', async () => {
    const before = logs.lines.length
    const answer = await neverEndingForm().closed
    expect(answer).toMatch(/^HTTP\/1\.1 408 /)
    const said = await until(() => {
      const lines = logs.lines.slice(before)
      return lines.some((line) => line.msg === 'request body not received') ? lines : undefined
    })
    await new Promise((resolve) => setTimeout(resolve, 200))
    const about = logs.lines.slice(before)
    expect(said.filter((line) => line.msg === 'request body not received')).toEqual([
      expect.objectContaining({ outcome: 'timeout', path: '/forms/no-such-form' }),
    ])
    expect(about.filter((line) => line.level >= 50 || withStack(line))).toEqual([])
  })

  it('cuts an API body that stops short of its Content-Length: the access log says 408', async () => {
    const request = begin(
      '/v1/send',
      {
        authorization: `Bearer ${sender.key}`,
        'content-type': 'application/json',
        'content-length': '5000',
        'x-request-id': 'stalled-send',
      },
      '{"to":"reader@example.com",',
    )
    expect(await request.closed).toMatch(/^HTTP\/1\.1 408 /)
    expect(await until(accessLine('stalled-send'))).toMatchObject({
      route: '/v1/send',
      status: 408,
      level: 30,
    })
    expect(logs.lines.filter((line) => line.level >= 50 || withStack(line))).toEqual([])
    expect(sender.sink.messages).toHaveLength(0)
  })

  it('logs a body its client gave up on as `aborted`, not as a failure', async () => {
    const request = begin(
      '/v1/send',
      {
        authorization: `Bearer ${sender.key}`,
        'content-type': 'application/json',
        'content-length': '5000',
        'x-request-id': 'abandoned-send',
      },
      '{"to":"reader@example.com",',
    )
    await new Promise((resolve) => setTimeout(resolve, 100))
    request.socket.destroy()
    expect(await until(accessLine('abandoned-send'))).toMatchObject({ status: 'aborted', level: 30 })
    expect(logs.lines.filter((line) => line.level >= 50 || withStack(line))).toEqual([])
  })

  it('refuses a body past its bounds where it passes them, without waiting for the rest', async () => {
    const keys = Array.from({ length: 10_001 }, (_, i) => `"key${i}":0`).join(',')
    const request = begin(
      '/v1/send',
      {
        authorization: `Bearer ${sender.key}`,
        'content-type': 'application/json',
        'content-length': String(5 * 1024 * 1024),
      },
      `{"to":"reader@example.com",${keys},`,
    )
    const answer = await request.closed
    expect(answer).toMatch(/^HTTP\/1\.1 400 /)
    expect(answer).toContain('"code":"too_big"')
  })

  it('lets a body that keeps arriving within its deadline through', async () => {
    const body = JSON.stringify({ to: 'reader@example.com', subject: 'Slow', text_body: 'x'.repeat(2000) })
    const request = begin(
      '/v1/send',
      {
        authorization: `Bearer ${sender.key}`,
        'content-type': 'application/json',
        'content-length': String(body.length),
        connection: 'close',
      },
      body.slice(0, 1000),
    )
    await new Promise((resolve) => setTimeout(resolve, 400))
    request.socket.write(body.slice(1000))
    expect(await request.closed).toMatch(/^HTTP\/1\.1 200 /)
    expect(sender.sink.messages).toHaveLength(1)
  })
})

describe('connections to the public pages, per client address', () => {
  it(`holds ${PER_ADDRESS} from one address, refuses the next with 429, and lets another address in`, async () => {
    const held = Array.from({ length: PER_ADDRESS }, () => neverEndingForm('127.0.0.1'))
    // Each is in (its request reached the server) before the next one counts.
    await new Promise((resolve) => setTimeout(resolve, 300))
    const refused = await neverEndingForm('127.0.0.1').closed
    expect(refused).toMatch(/^HTTP\/1\.1 429 /)
    const other = begin(
      '/forms/no-such-form',
      { 'content-type': 'text/plain', 'content-length': '1', connection: 'close' },
      'x',
      '127.0.0.2',
    )
    expect(await other.closed.then((text) => text.split('\r\n')[0])).not.toMatch(/ 429 /)
    // The API is no public page: the same address still reaches it.
    const api = await fetch(`${app.url}/health`)
    expect(api.status).toBe(200)
    for (const request of held) request.socket.destroy()
    await Promise.all(held.map((request) => request.closed))
    // Once they are closed, the address gets in again.
    const again = await until(async () => {
      const answer = await begin(
        '/forms/no-such-form',
        {
          'content-type': 'text/plain',
          'content-length': '1',
          connection: 'close',
        },
        'x',
      ).closed
      return answer.startsWith('HTTP/1.1 429') ? undefined : answer
    })
    expect(again).toMatch(/^HTTP\/1\.1 4(00|15) /)
  })
})
