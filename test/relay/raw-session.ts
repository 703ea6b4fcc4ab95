import net from 'node:net'

/** A hand-driven SMTP session in clear text, for what no client library lets a test do (stall mid-DATA, say). */
export interface RawSession {
  /** The greeting. */
  greeting: Promise<string>
  /** Sends a line (CRLF added) and resolves with the whole reply. */
  command(line: string): Promise<string>
  /** Writes bytes as they are, with no reply awaited. */
  write(bytes: string | Buffer): void
  /** Resolves when the server closed the connection, with what it said last. */
  closed: Promise<string>
  end(): void
}

const FINAL_LINE = /(^|\r\n)\d{3} [^\r\n]*\r\n$/

export function rawSession(host: string, port: number, localAddress?: string): RawSession {
  const socket = net.connect({ host, port, ...(localAddress ? { localAddress } : {}) })
  let buffer = ''
  let waiting: ((reply: string) => void) | undefined
  let last = ''
  const take = () => {
    if (!waiting || !FINAL_LINE.test(buffer)) return
    const reply = buffer
    buffer = ''
    last = reply
    const resolve = waiting
    waiting = undefined
    resolve(reply)
  }
  const next = () =>
    new Promise<string>((resolve) => {
      waiting = resolve
      take()
    })
  socket.setEncoding('utf8')
  socket.on('data', (text: string) => {
    buffer += text
    last = buffer
    take()
  })
  socket.on('error', () => {})
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(last)))
  return {
    greeting: next(),
    command(line) {
      const reply = next()
      socket.write(`${line}\r\n`)
      return reply
    },
    write(bytes) {
      socket.write(bytes)
    },
    closed,
    end() {
      socket.destroy()
    },
  }
}

/** AUTH PLAIN's initial response for user `mailroom` and `key`. */
export function plainAuth(key: string): string {
  return `AUTH PLAIN ${Buffer.from(`\0mailroom\0${key}`).toString('base64')}`
}
