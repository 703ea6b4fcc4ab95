import type { IncomingMessage, RequestListener, ServerOptions, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { type Config, largestBodyBytes } from '../config.ts'
import { addressOf } from './client-address.ts'

/** How the server bounds what one request, or one client address, can hold. */
export interface RequestGuard {
  /** A request body has this long to arrive in full... */
  bodyTimeoutMs: number
  /** ...plus one second for each this many bytes it is long. */
  bodyMinBytesPerSecond: number
  /** The body limit of the app `path` goes to: the length a body without Content-Length is given. */
  bodyLimitFor(path: string): number
  /** Pages open to anyone, on which one address may hold `publicConnectionsPerAddress` connections. */
  isPublic(path: string): boolean
  publicConnectionsPerAddress: number
  /** Behind a trusted reverse proxy, the client's address is the last X-Forwarded-For names. */
  trustProxy: boolean
}

/**
 * The guard the settings describe: `isPublic` names the public pages, whose bodies are at most
 * `publicBodyLimit` long; every other route's are at most the service's body limit.
 */
export function requestGuard(
  config: Config,
  isPublic: (path: string) => boolean,
  publicBodyLimit: number,
): RequestGuard {
  return {
    bodyTimeoutMs: config.bodyTimeoutSeconds * 1000,
    bodyMinBytesPerSecond: config.bodyMinBytesPerSecond,
    bodyLimitFor: (path) => (isPublic(path) ? publicBodyLimit : largestBodyBytes(config)),
    isPublic,
    publicConnectionsPerAddress: config.publicConnectionsPerAddress,
    trustProxy: config.trustProxy,
  }
}

/** Why a request's body never arrived whole: cut at its deadline, or the client went away. */
export type Interruption = 'timeout' | 'aborted'

const timedOut = new WeakSet<IncomingMessage>()
const counted = new WeakSet<Socket>()
/** Time for the answer to a cut request to leave before its connection is closed regardless. */
const FAREWELL_MS = 1000

/**
 * Whether the request behind a handler's `env` (@hono/node-server's `{ incoming }`) lost its
 * body: its read then fails, and what failed is the request, not the service.
 */
export function interruption(env: unknown): Interruption | undefined {
  const incoming = (env as { incoming?: IncomingMessage } | undefined)?.incoming
  if (!incoming) return undefined
  if (timedOut.has(incoming)) return 'timeout'
  return incoming.destroyed && !incoming.complete ? 'aborted' : undefined
}

/**
 * Node's own limits, set to back the guard up: request headers have the body's base time to
 * arrive, a whole request no longer than the largest body could take, and both are checked
 * every second rather than every 30.
 */
export function guardedServerOptions(guard: RequestGuard, largestBody: number): ServerOptions {
  return {
    headersTimeout: guard.bodyTimeoutMs,
    requestTimeout: bodyDeadlineMs(guard, largestBody) + FAREWELL_MS,
    connectionsCheckingInterval: 1000,
  }
}

/**
 * `listener` behind the guard: a request with a body is cut with 408 once its deadline passes
 * (the body's base time plus its length at the minimum rate, its Content-Length or else its
 * app's limit), and a request to a public page is refused with 429 when its address already
 * holds as many connections to them as it may.
 */
export function guardRequests(guard: RequestGuard, listener: RequestListener): RequestListener {
  const open = new Map<string, number>()
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    if (guard.isPublic(path) && !admitPublic(guard, open, req)) return refuse(req.socket)
    watchBody(guard, req, res, path)
    listener(req, res)
  }
}

/** Counts the connection against its address unless it already is or the address is full. */
function admitPublic(guard: RequestGuard, open: Map<string, number>, req: IncomingMessage): boolean {
  const socket = req.socket
  if (counted.has(socket)) return true
  const forwarded = req.headers['x-forwarded-for']
  const address = addressOf(
    Array.isArray(forwarded) ? forwarded.at(-1) : forwarded,
    socket.remoteAddress,
    guard.trustProxy,
  )
  if (address === undefined) return true
  const held = open.get(address) ?? 0
  if (held >= guard.publicConnectionsPerAddress) return false
  counted.add(socket)
  open.set(address, held + 1)
  socket.once('close', () => {
    const left = (open.get(address) ?? 1) - 1
    if (left > 0) open.set(address, left)
    else open.delete(address)
  })
  return true
}

function refuse(socket: Socket): void {
  const text = 'Too many open connections from your address: try again in a moment.\n'
  farewell(
    socket,
    `HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  )
}

function watchBody(guard: RequestGuard, req: IncomingMessage, res: ServerResponse, path: string): void {
  const declared = req.headers['content-length']
  if (declared === undefined ? req.headers['transfer-encoding'] === undefined : declared === '0') return
  const limit = guard.bodyLimitFor(path)
  const length = Math.min(declared === undefined ? limit : Number(declared) || 0, limit)
  const timer = setTimeout(() => cut(req, res), bodyDeadlineMs(guard, length))
  timer.unref()
  const stop = () => clearTimeout(timer)
  req.once('end', stop)
  req.once('close', stop)
}

/** How long a body `length` bytes long has to arrive. */
export function bodyDeadlineMs(guard: RequestGuard, length: number): number {
  return guard.bodyTimeoutMs + Math.ceil((length / guard.bodyMinBytesPerSecond) * 1000)
}

/**
 * Ends a request whose body is late, written on the socket as Node answers its own request
 * timeout: the response object is the handler's, which learns of the cut when its read of
 * the body fails.
 */
function cut(req: IncomingMessage, res: ServerResponse): void {
  if (req.complete || req.destroyed) return
  timedOut.add(req)
  if (res.headersSent) {
    req.socket.destroy()
    return
  }
  const text = 'The request body did not arrive in time.\n'
  farewell(
    req.socket,
    `HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  )
}

function farewell(socket: Socket, response: string): void {
  socket.end(response, 'latin1')
  setTimeout(() => socket.destroy(), FAREWELL_MS).unref()
}
