import { Socket } from 'node:net'
import type { Readable, Transform } from 'node:stream'
import type { Transporter } from 'nodemailer'
import addressparser from 'nodemailer/lib/addressparser'
import * as base64 from 'nodemailer/lib/base64'
import MailComposer from 'nodemailer/lib/mail-composer'
import type Mail from 'nodemailer/lib/mailer'
import * as mimeFuncs from 'nodemailer/lib/mime-funcs'
import MimeNode from 'nodemailer/lib/mime-node'
import * as qp from 'nodemailer/lib/qp'
import { installedVersion, refuseUnpinned } from '../pinned-version.ts'
import type { SentInfo } from './outcome.ts'

/**
 * Every use of nodemailer beyond its documented API (`createTransport`, `sendMail`, `verify`,
 * `close`): its MIME encoders, which compose a message at a fraction of MailComposer's cost, and
 * its pool's queue and sessions, which no public API exposes. Each was written against one
 * version; `checkPinnedVersion` refuses any other at start. The list and the reasons are in
 * docs/architecture.md ("Third-party internals").
 */
const WRITTEN_AGAINST = '10.6.0'

/** Throws, naming both versions, unless `installed` is the version these internals were written against. */
export function checkPinnedVersion(installed = installedVersion('nodemailer')): void {
  refuseUnpinned('nodemailer', WRITTEN_AGAINST, installed)
}

/**
 * One node serves every header value: it only encodes (its boundary, given, spares it a random
 * one). Its `encodeHeaderValue` punycodes, quotes and MIME-encodes addresses and makes encoded
 * words of other text.
 */
const headerEncoder = new MimeNode(undefined, { baseBoundary: 'unused' })

/** The addresses an address header's value names (`Name <a@b>, group: c@d;`), groups flattened. */
export function addressesIn(value: string): string[] {
  return addressparser(value, { flatten: true }).flatMap((a) => (a.address ? [a.address] : []))
}

/** A header's value as nodemailer writes it (unfolded). */
export function encodeHeaderValue(key: string, value: string | string[]): string {
  return headerEncoder.encodeHeaderValue(key, value)
}

/** A header line folded as nodemailer folds it. */
export function foldLines(line: string, length: number): string {
  return mimeFuncs.foldLines(line, length)
}

/** A structured header value (`text/plain; charset=utf-8`), its parameters encoded as nodemailer does. */
export function buildHeaderValue(value: string, params: Record<string, string>): string {
  return mimeFuncs.buildHeaderValue({ value, params })
}

/** nodemailer's choice of transfer encoding for a text part: as it is when it can be, else the shorter. */
export function transferEncodingOf(type: string, content: string): string | false {
  return new MimeNode(type, { baseBoundary: 'unused' }).setContent(content).getTransferEncoding()
}

/** A body in base64, wrapped as nodemailer wraps it. */
export function base64Body(content: string): string {
  return encodedWhole(new base64.Encoder(), content)
}

/** A body in quoted-printable, wrapped as nodemailer wraps it. */
export function quotedPrintableBody(content: string): string {
  return encodedWhole(new qp.Encoder(), content)
}

/**
 * Runs one of nodemailer's encoders over a whole body at once, without a stream around it: the
 * encoder's own transform and flush, so that line wrapping comes out exactly as when streamed.
 */
function encodedWhole(encoder: Transform, content: string): string {
  const out: string[] = []
  encoder.push = (chunk: unknown) => {
    if (chunk !== null) out.push(String(chunk))
    return true
  }
  const failed = (error?: Error | null) => {
    if (error) throw error
  }
  encoder._transform(Buffer.from(content), 'buffer' as BufferEncoding, failed)
  encoder._flush?.(failed)
  return out.join('')
}

/** What a message is to the pool: its envelope, its Message-ID and its bytes. */
export interface PoolMessageSource {
  envelope: { from: string; to: string[] }
  size: number
  messageId: string
  /** Ours, not nodemailer's: marks a message a caller waits for, in the pool's queue. */
  callerWaits: boolean
  /** Declare `BODY=8BITMIME` to a server that offers it: the bytes may hold 8-bit text. */
  eightBit?: boolean
  /** A stream of the bytes, made again if the pool requeues the message on another session. */
  stream(): Readable
  /**
   * Ours: asked when a session that has greeted the server is about to send the message; false
   * keeps it from being sent at all (see pooledMessage).
   */
  sendable?(): boolean
}

/**
 * What nodemailer's pool reads of a message it is handed (SMTPPool.send and PoolResource.send):
 * its envelope (with its size, sent with MAIL FROM to a server that offers SIZE), its Message-ID
 * (for its own log lines) and a stream of its bytes.
 */
export interface PooledMessage {
  data: Record<string, never>
  callerWaits: boolean
  message: {
    getEnvelope(): PoolMessageSource['envelope'] & { size: number; use8BitMime?: boolean }
    messageId(): string
    getHeader(key: string): string | undefined
    createReadStream(): Readable
  }
}

/** A message in the pool's queue, waiting for a free session. */
interface QueuedMail {
  mail: PooledMessage
}

/**
 * One of nodemailer's pooled sessions (its PoolResource): whether it is free for a message or
 * done for, its SMTP connection, and the events it emits when it becomes free and when it ends.
 */
export interface PooledSession {
  available?: boolean
  _failed?: boolean
  _closed?: boolean
  /** Greeted (and logged in): its connection's extensions are known. */
  _connected?: boolean
  connection?: { quit(): void; _supportedExtensions?: string[] }
  close(): void
  once(event: 'close', listener: () => void): void
  prependOnceListener(event: 'available', listener: () => void): void
}

/**
 * nodemailer's pool (its SMTPPool): how it is handed a message, the messages waiting for a free
 * session, its sessions, and how many it may open (read each time it looks for a free one).
 */
export interface SmtpPool {
  send(mail: PooledMessage, callback: (error: Error | null, info: SentInfo) => void): void
  options: { maxConnections: number }
  _queue?: QueuedMail[]
  _connections?: PooledSession[]
}

/** The pool behind a transporter made with `pool: true`. */
export function poolOf(transporter: Transporter): SmtpPool {
  return (transporter as unknown as { transporter: SmtpPool }).transporter
}

/** A message as the pool reads it (see PooledMessage). */
export function pooledMessage(source: PoolMessageSource): PooledMessage {
  return {
    data: {},
    callerWaits: source.callerWaits,
    message: {
      // The session asks for the envelope before its first command for the message. An envelope
      // without recipients is refused by nodemailer itself, before any command, with EENVELOPE;
      // the session then resets and stays in the pool.
      getEnvelope: () =>
        source.sendable?.() === false
          ? { from: source.envelope.from, to: [], size: source.size }
          : { ...source.envelope, size: source.size, use8BitMime: source.eightBit === true },
      messageId: () => source.messageId,
      getHeader: (key) => (key.toLowerCase() === 'message-id' ? source.messageId : undefined),
      createReadStream: () => source.stream(),
    },
  }
}

/**
 * Hands a message straight to the pool, past `sendMail`, which would first run nodemailer's
 * plugins and compose the raw message again (see sendRaw).
 */
export function handToPool(
  pool: SmtpPool,
  mail: PooledMessage,
  callback: (error: Error | null, info: SentInfo) => void,
): void {
  pool.send(mail, callback)
}

/** How many sessions the pool may open: its `maxConnections`, which it reads each time it looks for a free one. */
export function sessionCap(pool: SmtpPool): number {
  return pool.options.maxConnections
}

export function setSessionCap(pool: SmtpPool, cap: number): void {
  pool.options.maxConnections = cap
}

/**
 * The SMTP extensions the pool's server offers, as nodemailer read them from its EHLO reply on a
 * session that is connected (every session of a pool talks to the same server); undefined while
 * none is.
 */
export function offeredExtensions(pool: SmtpPool): string[] | undefined {
  for (const session of pool._connections ?? []) {
    const extensions = session.connection?._supportedExtensions
    if (session._connected && extensions) return extensions
  }
  return undefined
}

/** Sessions of the pool neither ended nor failed: one refused at connect is already marked failed. */
export function liveSessions(pool: SmtpPool): number {
  return (pool._connections ?? []).filter((session) => !session._failed && !session._closed).length
}

/**
 * The pool's queue itself, in the order it serves it (none once the pool is closed): reordering
 * it changes which message the next free session takes.
 */
export function queueOf(pool: SmtpPool): QueuedMail[] | undefined {
  return pool._queue
}

/** The pool's sessions, open or opening. */
export function sessionsOf(pool: SmtpPool): PooledSession[] {
  return pool._connections ?? []
}

/**
 * Calls `listener` once the session is free of its message: at once if it is, else when it
 * becomes free, ahead of the pool's own listener (which would hand it the next message).
 */
export function whenSessionFree(session: PooledSession, listener: () => void): void {
  if (session.available) listener()
  else session.prependOnceListener('available', listener)
}

export function onceSessionClosed(session: PooledSession, listener: () => void): void {
  session.once('close', listener)
}

/**
 * Tells a connected session QUIT, after `beforeQuit`; it is not handed another message
 * meanwhile. A session not connected yet is left alone.
 */
export function quitSession(session: PooledSession, beforeQuit: () => void): void {
  const connection = session.connection
  if (!connection) return
  session.available = false
  beforeQuit()
  connection.quit()
}

export function closeSession(session: PooledSession): void {
  session.close()
}

/**
 * The socket under a stream nodemailer's session pipes a message into: its data stream (which
 * stuffs dots and adds the end-of-data line) is itself piped into the socket. Node keeps a
 * stream's pipes in its private `_readableState`; no public API names them.
 */
export function socketUnder(dataStream: NodeJS.WritableStream): Socket | undefined {
  const piped = (dataStream as { _readableState?: { pipes?: unknown[] } })._readableState?.pipes?.[0]
  return piped instanceof Socket ? piped : undefined
}

/** The media type nodemailer gives a file by its name's extension; application/octet-stream for none it knows. */
export function contentTypeOf(filename: string): string {
  return mimeFuncs.detectMimeType(filename)
}

/** The bytes nodemailer's MailComposer makes of `mail` (its documented composer, reached by a lib/ path). */
export function mailComposerBytes(mail: Mail.Options): Promise<Buffer> {
  return new MailComposer(mail).compile().build()
}
