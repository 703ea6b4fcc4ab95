import type { Gauge } from 'prom-client'
import type { SMTPServerDataStream } from 'smtp-server'
import { LARGE_BODY_CHARS, takeTurn } from '../http/body-turns.ts'

/** A message received whole; `release` gives back its memory and its account's turn. */
export interface Received {
  message: Buffer
  release(): void
}

/**
 * The chunks of one message as they arrive, counted in the relay's buffered-bytes gauge until
 * released. A large message takes its account's turn of the process's large bodies before it
 * grows further, so that one account's many large sessions hold one large message at a time.
 */
class Chunks {
  private chunks: Buffer[] = []
  bytes = 0
  private turn: Promise<() => void> | undefined
  private released = false

  constructor(private readonly gauge: Gauge) {}

  add(chunk: Buffer): void {
    this.chunks.push(chunk)
    this.bytes += chunk.length
    this.gauge.inc(chunk.length)
  }

  /** The message has just become large: it has yet to take its account's turn. */
  needsTurn(): boolean {
    return !this.turn && this.bytes >= LARGE_BODY_CHARS
  }

  async takeTurn(accountId: number): Promise<void> {
    this.turn = takeTurn(accountId)
    await this.turn
  }

  whole(): Buffer {
    const message = Buffer.concat(this.chunks, this.bytes)
    this.chunks = [message]
    return message
  }

  release(): void {
    if (this.released) return
    this.released = true
    this.gauge.dec(this.bytes)
    this.chunks = []
    this.bytes = 0
    void this.turn?.then((end) => end())
  }
}

/**
 * Reads the DATA stream within `maxBytes`: `too_big` once it went over (what came after is read
 * and dropped), else the message. A stream that ends early (the client went away, or was dropped
 * for stalling) rejects, its chunks released.
 */
export function receiveMessage(
  stream: SMTPServerDataStream,
  bound: { maxBytes: number; accountId: number; gauge: Gauge },
): Promise<Received | 'too_big'> {
  const chunks = new Chunks(bound.gauge)
  let tooBig = false
  return new Promise((resolve, reject) => {
    stream.on('data', (chunk: Buffer) => {
      if (tooBig) return
      if (stream.sizeExceeded || chunks.bytes + chunk.length > bound.maxBytes) {
        tooBig = true
        chunks.release()
        return
      }
      chunks.add(chunk)
      if (!chunks.needsTurn()) return
      stream.pause()
      chunks.takeTurn(bound.accountId).then(() => stream.resume(), reject)
    })
    stream.once('end', () => {
      if (tooBig) return resolve('too_big')
      resolve({ message: chunks.whole(), release: () => chunks.release() })
    })
    stream.once('error', (error) => {
      chunks.release()
      reject(error)
    })
    stream.once('close', () => {
      if (stream.readableEnded) return
      chunks.release()
      reject(new Error('the client went away before the message was received in full'))
    })
  })
}
