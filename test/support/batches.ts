/**
 * What the batch tests (POST /send/batch, GET and DELETE /batches/{id}, batch processing,
 * placeholders, `mailroom batch ...`) share: the three batch operations over HTTP, audiences and
 * templates made over HTTP, polling a batch, the real `mailroom` binary, and a small MIME decoder
 * for what the SMTP sink received.
 */
import { execFile } from 'node:child_process'
import { expect } from 'vitest'
import { DEFAULT_EXPANSION, type ExpansionPolicy, expandBatch } from '../../src/batches/expansion.ts'
import type { TestApp } from './app.ts'
import { humanText } from './matchers.ts'
import { mailroomEnv, ROOT, waitFor, waitForMatch } from './queue.ts'

/** A batch as GET /batches/{id} shows it. */
export interface BatchView {
  id: number
  name: string
  status: 'pending' | 'running' | 'completed' | 'failed'
  total_count: number
  sent_count: number
  failed_count: number
  progress: number
  created_at: string
  updated_at: string
}

export interface Answer {
  status: number
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the tests
  body: any
}

export async function answerOf(res: Response): Promise<Answer> {
  const text = await res.text()
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    body = text
  }
  return { status: res.status, body }
}

export async function postBatch(app: TestApp, key: string, body: unknown): Promise<Answer> {
  return answerOf(await app.request('/send/batch', { method: 'POST', key, body }))
}

export async function getBatch(app: TestApp, key: string, id: number | string): Promise<Answer> {
  return answerOf(await app.request(`/batches/${id}`, { key }))
}

export async function deleteBatch(app: TestApp, key: string, id: number | string): Promise<Answer> {
  return answerOf(await app.request(`/batches/${id}`, { method: 'DELETE', key }))
}

/** A batch that must be accepted; returns its id after checking the created body's shape. */
export async function createdBatch(app: TestApp, key: string, body: unknown): Promise<number> {
  const reply = await postBatch(app, key, body)
  if (reply.status !== 200) throw new Error(`batch refused: ${reply.status} ${JSON.stringify(reply.body)}`)
  return reply.body.batch_id as number
}

/** The batch as GET shows it; it must exist. */
export async function batchOf(app: TestApp, key: string, id: number): Promise<BatchView> {
  const reply = await getBatch(app, key, id)
  if (reply.status !== 200)
    throw new Error(`GET /batches/${id}: ${reply.status} ${JSON.stringify(reply.body)}`)
  return reply.body.batch as BatchView
}

/** Polls `check` until it returns something other than undefined; throws after `timeoutMs`. */
export function poll<T>(
  what: string | (() => string),
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<T> {
  return waitFor(what, check, timeoutMs, intervalMs)
}

/** Polls GET /batches/{id} until `condition` holds; returns that view. */
export function waitForBatch(
  app: TestApp,
  key: string,
  id: number,
  condition: (batch: BatchView) => boolean,
  timeoutMs = 10_000,
): Promise<BatchView> {
  return waitForMatch(`batch ${id}`, () => batchOf(app, key, id), condition, timeoutMs, 50)
}

/** Polls until the batch has ended (completed or failed). */
export function waitForBatchEnd(
  app: TestApp,
  key: string,
  id: number,
  timeoutMs = 10_000,
): Promise<BatchView> {
  return waitForBatch(app, key, id, (b) => b.status === 'completed' || b.status === 'failed', timeoutMs)
}

/** `count` distinct addresses `<prefix><i>@example.com`. */
export function addresses(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}${i}@example.com`)
}

/** An audience made over HTTP with these members; returns its id. */
export async function audienceWith(
  app: TestApp,
  key: string,
  members: { email: string; payload?: Record<string, unknown> }[],
  name = 'Batch test audience',
): Promise<number> {
  const created = await answerOf(await app.request('/audiences', { method: 'POST', key, body: { name } }))
  if (created.status !== 201) throw new Error(`audience refused: ${JSON.stringify(created.body)}`)
  const id = created.body.audience.id as number
  if (members.length) {
    const added = await answerOf(
      await app.request(`/audiences/${id}/members`, { method: 'POST', key, body: { members } }),
    )
    if (added.status !== 201) throw new Error(`members refused: ${JSON.stringify(added.body)}`)
  }
  return id
}

/** A saved template made over HTTP; returns its id. */
export async function templateWith(
  app: TestApp,
  key: string,
  content: { subject: string; text_body?: string; html_body?: string },
  name = 'Batch test template',
): Promise<number> {
  const created = await answerOf(
    await app.request('/templates', { method: 'POST', key, body: { name, ...content } }),
  )
  if (created.status !== 201) throw new Error(`template refused: ${JSON.stringify(created.body)}`)
  return created.body.template.id as number
}

/**
 * Moves the batch's stored recipients into the outbox now, all of them, as the worker's
 * expansion would (for tests that run no worker, or want its steps under `policy`).
 */
export async function expandNow(
  app: TestApp,
  batchId: number,
  policy: Partial<ExpansionPolicy> = { ahead: Number.MAX_SAFE_INTEGER },
): Promise<void> {
  const { sql, secret, config } = app.services
  await expandBatch(
    { sql, links: { secret, publicUrl: config.publicUrl } },
    { batchId },
    {
      ...DEFAULT_EXPANSION,
      ...policy,
    },
  )
}

/** The temporary audience behind a `recipients` batch (the API does not show its id). */
export async function temporaryAudienceOf(app: TestApp, batchId: number): Promise<number | null> {
  const [row] = await app.services.sql<{ id: number | null }[]>`
    select temporary_audience_id as id from batches where id = ${batchId}`
  return row?.id ?? null
}

// --- Expected bodies -----------------------------------------------------------------------------

export function standard(status: number, code: string, details?: Record<string, unknown>): Answer {
  return { status, body: details ? { code, message: humanText, details } : { code, message: humanText } }
}

export const BATCH_NOT_FOUND = standard(404, 'BATCH_NOT_FOUND')
export const INVALID_ID = standard(400, 'INVALID_ID')
export const INVALID_STATUS = standard(400, 'INVALID_STATUS')

/** 400 with the validation body; when `path` is given, one issue's path starts with it. */
export function expectValidation(reply: Answer, path?: (string | number)[]): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(400)
  expect(reply.body).toEqual({
    success: false,
    error: {
      name: 'ZodError',
      issues: expect.arrayContaining([
        { path: expect.any(Array), message: expect.any(String), code: expect.any(String) },
      ]),
    },
  })
  for (const issue of reply.body.error.issues) {
    expect(issue).toEqual(
      expect.objectContaining({ path: expect.any(Array), message: humanText, code: expect.any(String) }),
    )
  }
  if (path) {
    const paths = reply.body.error.issues.map((issue: { path: unknown[] }) => issue.path)
    expect(
      paths.some((p: unknown[]) => path.every((part, i) => p[i] === part)),
      `an issue at ${JSON.stringify(path)} among ${JSON.stringify(paths)}`,
    ).toBe(true)
  }
}

// --- The real `mailroom` binary ------------------------------------------------------------------

export interface Run {
  code: number
  stdout: string
  stderr: string
}

/** Runs `node bin/mailroom.js ...args` on the test database, as an operator would. */
export function mailroom(databaseUrl: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['bin/mailroom.js', ...args],
      { cwd: ROOT, env: mailroomEnv(databaseUrl), timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0
        resolve({ code, stdout, stderr })
      },
    )
  })
}

/** A command that must succeed: exit 0 and exactly one JSON document on stdout. */
export async function mailroomJson(databaseUrl: string, args: string[]): Promise<unknown> {
  const run = await mailroom(databaseUrl, args)
  if (run.code !== 0) throw new Error(`mailroom ${args.join(' ')} exited ${run.code}: ${run.stderr}`)
  return JSON.parse(run.stdout)
}

// --- What the sink received, decoded ------------------------------------------------------------

export interface DecodedMessage {
  /** Header names in order, lower-case, every occurrence. */
  headerNames: string[]
  /** Decoded (RFC 2047) and unfolded Subject. */
  subject: string
  text: string | undefined
  html: string | undefined
}

function splitHead(raw: string): { head: string; body: string } {
  const match = /\r?\n\r?\n/.exec(raw)
  if (!match) return { head: raw, body: '' }
  return { head: raw.slice(0, match.index), body: raw.slice(match.index + match[0].length) }
}

/** RFC 5322 unfolding: a line break followed by white space is removed (the space stays). */
function headerFields(head: string): [string, string][] {
  const unfolded = head.replace(/\r?\n(?=[ \t])/g, '')
  const fields: [string, string][] = []
  for (const line of unfolded.split(/\r?\n/)) {
    const colon = line.indexOf(':')
    if (colon > 0)
      fields.push([line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).replace(/^ /, '')])
  }
  return fields
}

function qpBytes(text: string, underscoreIsSpace: boolean): Buffer {
  const bytes: number[] = []
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string
    if (ch === '=' && /^[0-9A-Fa-f]{2}$/.test(text.slice(i + 1, i + 3))) {
      bytes.push(Number.parseInt(text.slice(i + 1, i + 3), 16))
      i += 2
    } else if (ch === '_' && underscoreIsSpace) {
      bytes.push(0x20)
    } else {
      bytes.push(...Buffer.from(ch, 'utf8'))
    }
  }
  return Buffer.from(bytes)
}

const ENCODED_WORD = /=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g

/** Decodes RFC 2047 encoded words (UTF-8), joining adjacent ones as the RFC says. */
function decodeWords(value: string): string {
  const joined = value.replace(/(\?=)[ \t]+(?==\?)/g, '$1')
  let out = ''
  let pending: Buffer[] = []
  let last = 0
  const flush = () => {
    out += Buffer.concat(pending).toString('utf8')
    pending = []
  }
  for (const match of joined.matchAll(ENCODED_WORD)) {
    const between = joined.slice(last, match.index)
    if (between) {
      flush()
      out += between
    }
    const [, , encoding, text = ''] = match
    pending.push(encoding?.toUpperCase() === 'B' ? Buffer.from(text, 'base64') : qpBytes(text, true))
    last = match.index + match[0].length
  }
  flush()
  return out + joined.slice(last)
}

function decodeBody(body: string, encoding: string | undefined): string {
  switch ((encoding ?? '7bit').toLowerCase()) {
    case 'base64':
      return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8')
    case 'quoted-printable':
      return qpBytes(body.replace(/=\r?\n/g, ''), false).toString('utf8')
    default:
      return body
  }
}

interface Part {
  type: string
  body: string
}

function parts(raw: string): Part[] {
  const { head, body } = splitHead(raw)
  const fields = new Map(headerFields(head).map(([name, value]) => [name, value]))
  const contentType = fields.get('content-type') ?? 'text/plain'
  const type = (contentType.split(';')[0] ?? '').trim().toLowerCase()
  if (type.startsWith('multipart/')) {
    const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1]
    if (!boundary) return []
    const pieces = body.split(`--${boundary}`)
    return pieces
      .slice(1)
      .filter((piece) => !piece.startsWith('--'))
      .flatMap((piece) => parts(piece.replace(/^\r?\n/, '').replace(/\r?\n$/, '')))
  }
  return [{ type, body: decodeBody(body, fields.get('content-transfer-encoding')) }]
}

/** Subject and bodies of a received message, decoded from whatever transfer encoding was chosen. */
export function decodeMessage(raw: string): DecodedMessage {
  const { head } = splitHead(raw)
  const fields = headerFields(head)
  // The line break before SMTP's end-of-data dot ends the message, not its last part's body.
  const all = parts(raw.replace(/\r?\n$/, ''))
  const subject = fields.find(([name]) => name === 'subject')?.[1] ?? ''
  return {
    headerNames: fields.map(([name]) => name),
    subject: decodeWords(subject),
    text: all.find((p) => p.type === 'text/plain')?.body,
    html: all.find((p) => p.type === 'text/html')?.body,
  }
}
