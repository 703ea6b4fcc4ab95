/**
 * `npm run sink`: a local SMTP server to try Mailroom without a real provider. It speaks
 * STARTTLS on 127.0.0.1:2525 with a certificate from its own CA, takes one login, and prints a
 * line for every message it receives (nothing is delivered anywhere). Start Mailroom beside it
 * with NODE_EXTRA_CA_CERTS pointing at the CA and MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS=1.
 */
import path from 'node:path'
import { startSmtpSink } from '../test/support/smtp-sink.ts'
import { createTlsMaterial } from '../test/support/tls.ts'

const dir = path.resolve('.mailroom-sink')
const tls = await createTlsMaterial(dir)
const sink = await startSmtpSink({
  port: 2525,
  host: '127.0.0.1',
  username: 'dev@example.com',
  password: 'dev-password',
  tls,
})
const relative = path.relative(process.cwd(), tls.caPath)
console.log(`SMTP sink on ${sink.host}:${sink.port} (STARTTLS), login ${sink.username} / ${sink.password}

In each shell that runs Mailroom or its operator command, trust the sink's CA and allow a
loopback SMTP host:
  export NODE_EXTRA_CA_CERTS=${relative} MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS=1

Then add the sink as a connection (account 1 here):
  printf dev-password | npx mailroom connection add --account 1 --host 127.0.0.1 --port 2525 \\
      --username dev@example.com --password-stdin

Messages received are listed below; Ctrl-C stops the sink.`)

let shown = 0
setInterval(() => {
  for (const message of sink.messages.slice(shown)) {
    const subject = message.headers.get('subject') ?? ''
    console.log(
      `${message.receivedAt.toISOString()}  ${message.envelope.from} -> ${message.envelope.to.join(', ')}  "${subject}"`,
    )
  }
  shown = sink.messages.length
}, 250)

process.once('SIGINT', () => void sink.close().then(() => process.exit(0)))
