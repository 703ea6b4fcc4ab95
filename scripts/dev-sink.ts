/**
 * `npm run sink [-- --port 2525|587|465] [--host <address>]`: a local SMTP server to try Mailroom
 * without a real provider. It speaks STARTTLS (TLS from the start on 465) on 127.0.0.1:2525 by
 * default, with a certificate from its own CA, takes one login, and prints a line for every
 * message it receives and one for each file attached to it (nothing is delivered anywhere).
 * Start Mailroom beside it with NODE_EXTRA_CA_CERTS naming the CA and
 * MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS=1.
 *
 * The CA is made once and kept in .mailroom-sink/ (key and certificate): a restarted sink presents
 * a certificate the running Mailroom already trusts (Node reads NODE_EXTRA_CA_CERTS only at start).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import net from 'node:net'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { leaves, parseMime } from '../test/support/mime.ts'
import { type ReceivedMessage, startSmtpSink } from '../test/support/smtp-sink.ts'
import { makeCa, makeCertificate } from '../test/support/tls.ts'

/** The ports Mailroom accepts for a connection: a sink elsewhere could never be added. */
const PORTS = [2525, 587, 465] as const
type Port = (typeof PORTS)[number]
const USAGE = 'usage: npm run sink [-- --port 2525|587|465] [--host <address>]'
const LOGIN = { username: 'dev@example.com', password: 'dev-password' }
const YEAR_MS = 365 * 24 * 60 * 60 * 1000

function fail(line: string, code: number): never {
  console.error(`npm run sink: ${line}`)
  process.exit(code)
}

function readOptions(): { port: Port; host: string } {
  let values: { port: string; host: string }
  try {
    ;({ values } = parseArgs({
      options: { port: { type: 'string', default: '2525' }, host: { type: 'string', default: '127.0.0.1' } },
    }))
  } catch (error) {
    return fail(`${(error as Error).message} (${USAGE})`, 2)
  }
  const port = PORTS.find((p) => String(p) === values.port)
  if (port === undefined)
    fail(`--port must be 2525, 587 or 465, the ports Mailroom accepts; not ${values.port}`, 2)
  return { port, host: values.host }
}

/** The sink's CA, made on the first start (valid ten years) and read from `dir` on every later one. */
async function keptCa(dir: string): Promise<{ key: string; cert: string; certPath: string }> {
  const certPath = path.join(dir, 'ca.pem')
  const keyPath = path.join(dir, 'ca-key.pem')
  try {
    return { key: await readFile(keyPath, 'utf8'), cert: await readFile(certPath, 'utf8'), certPath }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  await mkdir(dir, { recursive: true, mode: 0o700 })
  const now = Date.now()
  const ca = await makeCa('Mailroom development sink CA', {
    notBeforeDate: new Date(now - 60 * 60 * 1000),
    notAfterDate: new Date(now + 10 * YEAR_MS),
  })
  await writeFile(keyPath, ca.key, { mode: 0o600 })
  await writeFile(certPath, ca.cert)
  return { ...ca, certPath }
}

const { port, host } = readOptions()
const ca = await keptCa(path.resolve('.mailroom-sink'))
// The server's certificate is made at each start, for the address asked for, by the kept CA.
const tls = await makeCertificate(net.isIP(host) ? { ips: [host] } : { dnsNames: [host] }, ca, {
  notBeforeDate: new Date(Date.now() - 60 * 60 * 1000),
  notAfterDate: new Date(Date.now() + YEAR_MS),
})
const sink = await startSmtpSink({ port, host, ...LOGIN, tls }).catch((error: Error) =>
  fail(`${error.message}; choose another with --port or --host`, 1),
)
console.log(`SMTP sink on ${sink.host}:${sink.port} (${port === 465 ? 'TLS' : 'STARTTLS'}), login ${sink.username} / ${sink.password}

In each shell that runs Mailroom or its operator command, trust the sink's CA and allow a
loopback SMTP host:
  export NODE_EXTRA_CA_CERTS=${ca.certPath} MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS=1

Then add the sink as a connection (account 1 here):
  printf ${LOGIN.password} | ./bin/mailroom.js connection add --account 1 --host ${sink.host} --port ${sink.port} \\
      --username ${LOGIN.username} --password-stdin

Messages received are listed below; Ctrl-C stops the sink.`)

let shown = 0
setInterval(() => {
  for (const message of sink.messages.slice(shown)) {
    const subject = message.headers.get('subject') ?? ''
    console.log(
      `${message.receivedAt.toISOString()}  ${message.envelope.from} -> ${message.envelope.to.join(', ')}  "${subject}"`,
    )
    for (const file of attachedFiles(message)) console.log(`    attached ${file}`)
  }
  shown = sink.messages.length
}, 250)

/** Each attached file as `name (type, size)`: the leaves of the message a reader offers as files. */
function attachedFiles(message: ReceivedMessage): string[] {
  return leaves(parseMime(message.raw)).flatMap((part) => {
    const disposition = part.headers.get('content-disposition')
    if (disposition === undefined) return []
    return [`${filenameOf(disposition)} (${part.type}, ${part.content.length} bytes)`]
  })
}

/** A Content-Disposition's filename, given whole, or in RFC 2231 pieces percent-encoded. */
function filenameOf(disposition: string): string {
  const pieces = [...disposition.matchAll(/filename(?:\*\d+)?(\*)?="?([^";]*)/gi)]
  if (pieces.length === 0) return 'unnamed'
  const joined = pieces.map(([, , value = '']) => value.replace(/^utf-8''/i, '')).join('')
  if (!pieces.some(([, encoded]) => encoded)) return joined
  try {
    return decodeURIComponent(joined)
  } catch {
    return joined
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void sink.close().then(() => process.exit(0)))
}
