import nodemailer, { type Transporter } from 'nodemailer'
import { loadConfig } from '../../src/config.ts'
import { type Bench, type Figures, message, type Scenario, WARM_UP } from '../support.ts'
import { QUEUED } from './enqueue.ts'

/**
 * The SMTP relay as an app uses it: a nodemailer pool (STARTTLS, AUTH with the bench's API key)
 * submits QUEUED of /enqueue's messages, `concurrency` sendMail calls at a time, timed from the first until
 * the last reached the sink; after WARM_UP of them, as /enqueue's row warms up. The service
 * inherits the bench's environment, so its relay listens on the port that environment names
 * (MAILROOM_SMTP_PORT, 2587 by default).
 */
async function relayRun(bench: Bench): Promise<Figures> {
  const port = loadConfig(process.env).relay.port
  if (!port) throw new Error('the relay row needs the STARTTLS listener on a fixed port (MAILROOM_SMTP_PORT)')
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    requireTLS: true,
    auth: { user: 'mailroom', pass: bench.key },
    // The service's own self-signed certificate.
    tls: { rejectUnauthorized: false },
    // nodemailer's own pool of five sessions, as an app that sets nothing more gets.
    pool: true,
  })
  try {
    return await bench.timed(
      `SMTP relay ×${QUEUED} → delivered`,
      QUEUED,
      () => submitAll(bench, transport, QUEUED, 3_000_000),
      () => submitAll(bench, transport, WARM_UP, 4_000_000),
    )
  } finally {
    transport.close()
  }
}

async function submitAll(bench: Bench, transport: Transporter, count: number, first: number): Promise<void> {
  const arrived = bench.delivered(count)
  let next = 0
  await Promise.all(
    Array.from({ length: bench.concurrency }, async () => {
      while (next < count) {
        const { from, to, subject, text_body } = message(first + next++, bench.from)
        await transport.sendMail({ from, to, subject, text: text_body })
      }
    }),
  )
  await arrived
}

export const relay: Scenario = {
  name: 'relay',
  async run(bench: Bench) {
    return [await relayRun(bench)]
  },
}
