import type { ScryptOptions } from 'node:crypto'
import { Worker } from 'node:worker_threads'

/**
 * The thread's code. It lowers its own CPU priority to the lowest (nice 19) before it hashes
 * anything: Linux schedules each thread on its own, and a thread's id is what setpriority takes
 * for it. Where that fails (another system) it hashes at the usual priority.
 */
const SOURCE = `
const { parentPort } = require('node:worker_threads')
const { scryptSync } = require('node:crypto')
const { readlinkSync } = require('node:fs')
const { setPriority } = require('node:os')
try { setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), 19) } catch {}
parentPort.on('message', ({ id, password, salt, keyBytes, options }) => {
  try {
    parentPort.postMessage({ id, key: scryptSync(password, Buffer.from(salt), keyBytes, options) })
  } catch (error) {
    parentPort.postMessage({ id, error: error instanceof Error ? error.message : String(error) })
  }
})
`

interface Answer {
  id: number
  key?: Uint8Array
  error?: string
}

type Waiter = { resolve: (key: Buffer) => void; reject: (error: Error) => void }

/**
 * Password hashing on one thread at the lowest CPU priority. A password hash takes a core for
 * about a second; on libuv's pool it competed as an equal with the event loop and PostgreSQL, so
 * a burst of sign-ins slowed every other request. At the lowest priority it takes only the CPU
 * nothing else wants: sign-ins wait longer under load, other requests do not. Hashes go one at a
 * time (the callers' line is bounded in passwords.ts).
 */
class ScryptThread {
  #worker: Worker | undefined
  #nextId = 0
  readonly #waiting = new Map<number, Waiter>()

  derive(password: string, salt: Buffer, keyBytes: number, options: ScryptOptions): Promise<Buffer> {
    const id = this.#nextId++
    const worker = this.#started()
    return new Promise<Buffer>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject })
      // Held open only while a hash is owed: an idle thread never keeps the process alive.
      worker.ref()
      worker.postMessage({ id, password, salt, keyBytes, options })
    })
  }

  #started(): Worker {
    if (this.#worker) return this.#worker
    const worker = new Worker(SOURCE, { eval: true })
    worker.on('message', (answer: Answer) => this.#answered(answer))
    // A thread that dies fails what it owed; the next hash starts a new one.
    const fail = (error: Error) => {
      if (this.#worker === worker) this.#worker = undefined
      for (const waiter of this.#waiting.values()) waiter.reject(error)
      this.#waiting.clear()
    }
    worker.on('error', fail)
    worker.on('exit', (code) => fail(new Error(`the password hashing thread ended (${code})`)))
    this.#worker = worker
    return worker
  }

  #answered({ id, key, error }: Answer): void {
    const waiter = this.#waiting.get(id)
    this.#waiting.delete(id)
    if (this.#waiting.size === 0) this.#worker?.unref()
    if (!waiter) return
    if (key) waiter.resolve(Buffer.from(key.buffer, key.byteOffset, key.byteLength))
    else waiter.reject(new Error(error ?? 'scrypt failed'))
  }
}

export const scryptThread = new ScryptThread()
