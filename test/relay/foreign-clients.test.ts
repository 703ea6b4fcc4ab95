/**
 * Clients nobody here wrote submit through the relay: Debian's swaks (AUTH PLAIN and LOGIN, over
 * STARTTLS and implicit TLS) and Python's smtplib (SMTPUTF8, X-Mailroom-Tags). Their mail reaches
 * the provider as they wrote it, but for Bcc and the tags header, and shows in GET /emails/{id}
 * as source `smtp`.
 */
import { execFile, spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { ensureDebianPackage } from '../support/debian-packages.ts'
import { useEmailsApi } from '../support/emails.ts'
import { waitFor } from '../support/queue.ts'
import type { Sender } from '../support/sending.ts'
import type { ReceivedMessage } from '../support/smtp-sink.ts'
import { type Mode, useRelay } from './relay-fixture.ts'

const run = promisify(execFile)
const SWAKS = '/usr/bin/swaks'
const PYTHON = spawnSync('python3', ['--version']).status === 0

const app = useTestApp()
const fixture = useRelay(app)
const { proSender, waitForEmail } = useEmailsApi(app)

let dir = ''
beforeAll(async () => {
  ensureDebianPackage(SWAKS, 'swaks libnet-ssleay-perl libauthen-sasl-perl')
  dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-foreign-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

function portOf(mode: Mode): number {
  const port = mode === 'implicit' ? fixture.relay.ports.smtps : fixture.relay.ports.smtp
  if (port === null) throw new Error(`the relay's ${mode} listener is off`)
  return port
}

/** The email the relay's 250 named: `250 2.0.0 Queued as email <id> <message-id>`. */
function queuedId(transcript: string): number {
  const id = /250 2\.0\.0 Queued as email (\d+) /.exec(transcript)?.[1]
  if (!id) throw new Error(`no 250 naming the queued email in:\n${transcript}`)
  return Number(id)
}

/** The message at `sender`'s sink whose Message-ID is `messageId`, once delivered. */
function delivered(sender: Sender, messageId: string): Promise<ReceivedMessage> {
  return waitFor(
    `${messageId} at the sink`,
    () => sender.sink.messages.find((m) => m.headers.get('message-id') === messageId),
    15_000,
  )
}

let seq = 0

/** A message as an app writes it, CRLF line ends, with a Bcc header among its own; `expected` is it without Bcc. */
function appMessage(s: Sender, subject: string) {
  const messageId = `<swaks-${++seq}.${Date.now()}@app.example.com>`
  const lines = (bcc: boolean) => [
    `From: "Relay App" <${s.from}>`,
    'To: Ada <ada@example.com>',
    ...(bcc ? ['Bcc: hidden@example.net'] : []),
    `Subject: ${subject}`,
    'Date: Sat, 28 Nov 2026 06:00:00 +0000',
    `Message-ID: ${messageId}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=us-ascii',
    'X-App-Trace:   spaced   as the app   wrote it',
    '',
    'First line of the body.',
    '  Indented, with trailing spaces   ',
    '',
    'Last line.',
  ]
  // swaks ends DATA with CRLF . CRLF: the message it sends ends with the CRLF it adds.
  return { messageId, submitted: lines(true).join('\r\n'), expected: `${lines(false).join('\r\n')}\r\n` }
}

describe("Debian's swaks submits through the relay", () => {
  it.each([
    ['starttls', 'PLAIN'],
    ['starttls', 'LOGIN'],
    ['implicit', 'PLAIN'],
    ['implicit', 'LOGIN'],
  ] as [Mode, string][])(
    'over %s with AUTH %s: Bcc removed, the rest byte-equal at the sink, source smtp',
    async (mode, method) => {
      const s = await proSender(`swaks-${mode}-${method.toLowerCase()}`)
      const message = appMessage(s, `swaks ${mode} ${method}`)
      const file = path.join(dir, `message-${seq}.eml`)
      await writeFile(file, message.submitted)
      const { stdout } = await run(SWAKS, [
        '--server',
        '127.0.0.1',
        '--port',
        String(portOf(mode)),
        mode === 'implicit' ? '--tls-on-connect' : '--tls',
        '--auth',
        method,
        '--auth-user',
        'mailroom',
        '--auth-password',
        s.key,
        '--from',
        s.from,
        '--to',
        'ada@example.com,hidden@example.net',
        '--data',
        `@${file}`,
      ])
      const id = queuedId(stdout)
      const received = await delivered(s, message.messageId)
      expect(received.envelope.from).toBe(s.from)
      expect([...received.envelope.to].sort()).toEqual(['ada@example.com', 'hidden@example.net'])
      expect(received.raw).toBe(message.expected)
      // The worker records the outcome once the sink has answered.
      const email = await waitForEmail(s.key, id, (e) => e.status !== 'queued' && e.status !== 'sending')
      expect(email).toMatchObject({
        source: 'smtp',
        status: 'sent',
        from: s.from,
        to: ['ada@example.com'],
        bcc: ['hidden@example.net'],
        message_id: message.messageId,
      })
    },
  )
})

/** smtplib's send_message over STARTTLS, logged in as `mailroom` with the key; the relay's certificate is not checked. */
const SMTPLIB_SCRIPT = `
import smtplib, ssl, sys
from email.message import EmailMessage
from email.policy import SMTPUTF8
host, port, key, sender, rcpt = sys.argv[1:6]
msg = EmailMessage(policy=SMTPUTF8)
msg['From'] = sender
msg['To'] = 'Zoë <' + rcpt + '>'
msg['Subject'] = 'Grüße über SMTP'
msg['X-Mailroom-Tags'] = 'campaign=welcome, lang=de'
msg.set_content('Hallo Zoë, schöne Grüße.\\n')
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
with smtplib.SMTP(host, int(port), timeout=20) as session:
    session.starttls(context=context)
    session.login('mailroom', key)
    session.send_message(msg)
`

describe(
  PYTHON
    ? "Python's smtplib submits through the relay"
    : "Python's smtplib: skipped, python3 is not on this machine",
  () => {
    it.skipIf(!PYTHON)(
      'sends a UTF-8 address with SMTPUTF8 and X-Mailroom-Tags over STARTTLS: delivered, tags on the email, the header gone',
      async () => {
        const s = await proSender('smtplib')
        const rcpt = 'zoë@example.com'
        await run('python3', [
          '-c',
          SMTPLIB_SCRIPT,
          '127.0.0.1',
          String(portOf('starttls')),
          s.key,
          s.from,
          rcpt,
        ])
        const [stored] = await app.services.sql<{ id: number; message_id: string }[]>`
          select id, message_id from outbox where account_id = ${s.accountId}`
        if (!stored) throw new Error('smtplib was answered 250 but no email was stored')
        const received = await delivered(s, stored.message_id)
        expect(received.envelope.to).toEqual([rcpt])
        expect(received.headers.get('subject')).toBe('Grüße über SMTP')
        expect(received.headers.has('x-mailroom-tags')).toBe(false)
        expect(received.raw).toContain('Hallo Zoë, schöne Grüße.')
        const email = await waitForEmail(
          s.key,
          stored.id,
          (e) => e.status !== 'queued' && e.status !== 'sending',
        )
        expect(email).toMatchObject({
          source: 'smtp',
          status: 'sent',
          to: [rcpt],
          subject: 'Grüße über SMTP',
          tags: [
            { name: 'campaign', value: 'welcome' },
            { name: 'lang', value: 'de' },
          ],
        })
      },
    )
  },
)
