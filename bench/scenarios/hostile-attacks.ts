/**
 * The attacks of the `hostile` scenario, each bounded in count and time and aimed at loopback
 * only: huge JSON bodies to /send, form submissions whose chunked body never ends, oversized
 * CSV imports in the dashboard, and a burst of wrong sign-ins. Each returns what the service
 * answered, for the report; none asserts anything.
 */
import http from 'node:http'
import net from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

/** What one kind of request was answered: statuses (0: no answer) and the slowest, in ms. */
export interface Outcome {
  statuses: Map<number, number>
  maxMs: number
  /** The first refusal's text, cut short: what the service said. */
  said?: string
}

export function outcome(): Outcome {
  return { statuses: new Map(), maxMs: 0 }
}

export function fiveHundreds(o: Outcome): number {
  return [...o.statuses].reduce((sum, [status, n]) => sum + (status >= 500 ? n : 0), 0)
}

export function describe(o: Outcome): string {
  const statuses = [...o.statuses]
    .sort(([a], [b]) => a - b)
    .map(([status, n]) => `${n}× ${status || 'no answer'}`)
    .join(', ')
  const slowest = o.maxMs > 0 ? `; slowest ${o.maxMs.toFixed(0)} ms` : ''
  return `${statuses || 'none'}${slowest}${o.said ? `; said “${o.said}”` : ''}`
}

export interface Call {
  method?: string
  headers?: Record<string, string | string[]>
  body?: Buffer | string
  agent?: http.Agent
  localAddress?: string
  timeoutMs?: number
}

export interface Answer {
  status: number
  ms: number
  text: string
  cookies: string[]
}

/** One request; never throws: no answer (an error, the time limit) is status 0. */
export function call(url: string, options: Call = {}, into?: Outcome): Promise<Answer> {
  const { method = 'GET', headers = {}, body, agent, localAddress, timeoutMs = 60_000 } = options
  const started = performance.now()
  return new Promise<Answer>((resolve) => {
    let answered = false
    // A refusal sent before the body was all written ends in an error on writing too: one answer.
    const done = (status: number, text: string, cookies: string[] = []) => {
      if (answered) return
      answered = true
      const answer = { status, ms: performance.now() - started, text, cookies }
      if (into) {
        into.statuses.set(status, (into.statuses.get(status) ?? 0) + 1)
        into.maxMs = Math.max(into.maxMs, answer.ms)
        if (status >= 400 && into.said === undefined) into.said = refusalText(text)
      }
      resolve(answer)
    }
    const request = http.request(
      url,
      {
        method,
        headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
        agent: agent ?? false,
        ...(localAddress ? { localAddress } : {}),
        timeout: timeoutMs,
      },
      (response) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('error', () => done(0, ''))
        response.on('end', () =>
          done(
            response.statusCode ?? 0,
            Buffer.concat(chunks).toString(),
            response.headers['set-cookie'] ?? [],
          ),
        )
      },
    )
    request.on('timeout', () => request.destroy(new Error('timed out')))
    request.on('error', () => done(0, ''))
    request.end(body)
  })
}

/** A refusal's message: the JSON `message`, or the text of a page's notice. */
function refusalText(text: string): string {
  const json = /"message"\s*:\s*"([^"]{0,160})/.exec(text)?.[1]
  const page = /role="alert"[^>]*>\s*<p>([^<]{0,160})/.exec(text)?.[1]
  return (
    json ??
    page ??
    text
      .replace(/<[^>]*>/g, ' ')
      .replace(/\s+/g, ' ')
      .trim()
  ).slice(0, 160)
}

/** `count` requests of `one`, `atOnce` at a time. */
export async function inTurn(count: number, atOnce: number, one: (i: number) => Promise<unknown>) {
  let next = 0
  await Promise.all(
    Array.from({ length: atOnce }, async () => {
      while (next < count) await one(next++)
    }),
  )
}

/** (1) /send bodies of 7 MB (one object, 600,000 keys) and of a million `{}`, from a Free key. */
export function hugeJsonBodies(): Buffer[] {
  const keys = Array.from({ length: 600_000 }, (_, i) => `"k${i}":1`).join(',')
  const wide = Buffer.from(`{${keys}}`)
  const long = Buffer.from(`[${Array.from({ length: 1_000_000 }, () => '{}').join(',')}]`)
  return [wide, long]
}

/** (3) A CSV of 500,000 members (8.9 MB) and one whose header has a million columns. */
export function hugeCsvFiles(): { name: string; content: Buffer }[] {
  const lines = Array.from({ length: 500_000 }, (_, i) => `${i}@example.io`).join('\n')
  const header = ['email', ...Array.from({ length: 1_000_000 }, (_, i) => `c${i}`)].join(',')
  return [
    { name: '500,000 lines', content: Buffer.from(`email\n${lines}\n`) },
    { name: 'a million columns', content: Buffer.from(`${header}\nhostile@example.com\n`) },
  ]
}

/** A multipart body with one file field, as a browser sends it. */
export function multipartFile(fields: Record<string, string>, file: Buffer): { body: Buffer; type: string } {
  const boundary = `----bench${Date.now()}`
  const parts = Object.entries(fields).map(
    ([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
  )
  const head = `${parts.join('')}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="members.csv"\r\nContent-Type: text/csv\r\n\r\n`
  return {
    body: Buffer.concat([Buffer.from(head), file, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    type: `multipart/form-data; boundary=${boundary}`,
  }
}

/** The form token of a dashboard page, and the cookies to send back. */
export function formToken(page: Answer): string {
  const token = /name="csrf" value="([^"]+)"/.exec(page.text)?.[1]
  if (!token) throw new Error(`no form token on the page (it answered ${page.status})`)
  return token
}

export function cookieHeader(cookies: string[]): string {
  return cookies.map((line) => line.split(';')[0]).join('; ')
}

/** (4) A wrong sign-in from `localAddress`: the sign-in page (its cookie and token), then the post. */
export async function wrongSignIn(base: string, email: string, localAddress: string, into: Outcome) {
  const page = await call(`${base}/dashboard/login`, { localAddress })
  await call(
    `${base}/dashboard/login`,
    {
      method: 'POST',
      localAddress,
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader(page.cookies) },
      body: new URLSearchParams({
        csrf: formToken(page),
        email,
        password: 'not the password at all',
        next: '',
      }).toString(),
    },
    into,
  )
}

/** How the never-ending submissions fared. */
export interface SlowBodies {
  opened: number
  /** Connections the service closed, answered or not, before the bench let go. */
  closedByService: number
  /** Their answers (0: closed without one), and the longest one was held open. */
  answered: Outcome
  /** Connections still open when the bench let go of them. */
  heldToTheEnd: number
}

/**
 * (2) `count` POST /forms/{id} with a chunked body that never ends: opened over `spreadMs` from
 * `addresses` in turn, each sending a byte of its body every 2 s until `until` resolves, then let go.
 */
export async function neverEndingBodies(
  target: { host: string; port: number; path: string },
  count: number,
  addresses: string[],
  spreadMs: number,
  until: Promise<void>,
): Promise<SlowBodies> {
  const result: SlowBodies = { opened: 0, closedByService: 0, answered: outcome(), heldToTheEnd: 0 }
  const open = new Set<net.Socket>()
  let letGo = false
  const head =
    `POST ${target.path} HTTP/1.1\r\nHost: ${target.host}:${target.port}\r\n` +
    'Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n5\r\na=bbb\r\n'
  const trickle = setInterval(() => {
    for (const socket of open) socket.write('1\r\nb\r\n')
  }, 2000)
  const opening = (async () => {
    for (let i = 0; i < count && !letGo; i++) {
      // Host and port only: a `path` among net.connect's options would name a Unix socket.
      const socket = net.connect({
        host: target.host,
        port: target.port,
        localAddress: addresses[i % addresses.length],
      })
      result.opened++
      open.add(socket)
      let reply = ''
      socket.on('data', (chunk: Buffer) => {
        reply += chunk.toString('latin1')
      })
      socket.on('error', () => {})
      const openedAt = performance.now()
      socket.on('close', () => {
        open.delete(socket)
        if (letGo) return
        result.closedByService++
        // How long the service held it: the slowest is what a deadline on bodies allows.
        result.answered.maxMs = Math.max(result.answered.maxMs, performance.now() - openedAt)
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1] ?? 0)
        result.answered.statuses.set(status, (result.answered.statuses.get(status) ?? 0) + 1)
      })
      socket.write(head)
      if (i % 50 === 49) await sleep((spreadMs * 50) / count)
    }
  })()
  await until
  letGo = true
  await opening
  clearInterval(trickle)
  result.heldToTheEnd = open.size
  for (const socket of open) socket.destroy()
  return result
}
