/**
 * A body over the limit is refused with 413 before it is buffered whole. Over a real
 * socket, the client announces (or streams) more than the limit and then stops sending: the
 * answer must come anyway. A service that waited for the whole body would never answer, and
 * the test would time out.
 */
import net from 'node:net'
import { beforeAll, describe, expect, it } from 'vitest'
import { HOSTED_BODY_LIMIT_BYTES } from '../../src/hosted/app.ts'
import { useTestApp } from '../support/app.ts'
import { type Sender, startSender } from '../support/sending.ts'

const LIMIT = 64 * 1024
const app = useTestApp({ bodyLimitBytes: LIMIT }, { listen: true })
let sender: Sender

beforeAll(async () => {
  sender = await startSender(app, 'oversized', { plan: 'pro' })
})

/**
 * Sends the request head and `sent` bytes of body, never the rest (the socket's writing side
 * stays open), and resolves with the status line and body of the answer.
 */
function answerToPartialBody(head: string, sent: number, chunked: boolean): Promise<string> {
  const { hostname, port } = new URL(app.url)
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.write(head)
      const part = Buffer.alloc(sent, 'a')
      socket.write(
        chunked ? Buffer.concat([Buffer.from(`${sent.toString(16)}\r\n`), part, Buffer.from('\r\n')]) : part,
      )
    })
    let answer = ''
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1')
      if (/\r\n\r\n[\s\S]*\}/.test(answer) || /content-length: 0\r\n/i.test(answer)) {
        socket.destroy()
        resolve(answer)
      }
    })
    socket.on('error', reject)
    socket.on('close', () => resolve(answer))
  })
}

function head(path: string, headers: Record<string, string>): string {
  const lines = Object.entries({ host: 'localhost', ...headers }).map(([name, value]) => `${name}: ${value}`)
  return `POST ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`
}

describe('a body over the limit is answered 413 before it is read whole', () => {
  it('API: announced by Content-Length (50 MB announced, 16 KiB sent)', async () => {
    const answer = await answerToPartialBody(
      head('/v1/send', {
        authorization: `Bearer ${sender.key}`,
        'content-type': 'application/json',
        'content-length': String(50 * 1024 * 1024),
      }),
      16 * 1024,
      false,
    )
    expect(answer).toMatch(/^HTTP\/1\.1 413 /)
    expect(answer).toContain('"code":"PAYLOAD_TOO_LARGE"')
  })

  it('API: streamed without Content-Length, refused once the limit is passed', async () => {
    const answer = await answerToPartialBody(
      head('/v1/send', {
        authorization: `Bearer ${sender.key}`,
        'content-type': 'application/json',
        'transfer-encoding': 'chunked',
      }),
      LIMIT + 1024,
      true,
    )
    expect(answer).toMatch(/^HTTP\/1\.1 413 /)
    expect(answer).toContain('"code":"PAYLOAD_TOO_LARGE"')
  })

  it('one byte under the limit is read (and judged on its content, not its size)', async () => {
    const body = JSON.stringify({ to: 'a@example.com', subject: 's', text_body: 'x'.repeat(LIMIT - 100) })
    const padded = body + ' '.repeat(LIMIT - 1 - Buffer.byteLength(body))
    const response = await fetch(`${app.baseUrl}/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sender.key}`, 'content-type': 'application/json' },
      body: padded,
    })
    expect(response.status).not.toBe(413)
    expect(response.status).toBeLessThan(500)
  })

  it('dashboard: a form announced over the limit', async () => {
    const answer = await answerToPartialBody(
      head('/dashboard/login', {
        'content-type': 'application/x-www-form-urlencoded',
        origin: app.url,
        'content-length': String(50 * 1024 * 1024),
      }),
      16 * 1024,
      false,
    )
    expect(answer).toMatch(/^HTTP\/1\.1 413 /)
  })

  it('hosted pages: a submission streamed past their 64 KiB', async () => {
    const answer = await answerToPartialBody(
      head('/forms/no-such-form', {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        'transfer-encoding': 'chunked',
      }),
      HOSTED_BODY_LIMIT_BYTES + 1024,
      true,
    )
    expect(answer).toMatch(/^HTTP\/1\.1 413 /)
    expect(answer).toContain('"code":"PAYLOAD_TOO_LARGE"')
  })
})
