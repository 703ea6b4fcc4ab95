import nodemailer from 'nodemailer'
import { resolveSmtpHost } from '../../src/smtp/host.ts'
import { smtpTransportOptions } from '../../src/smtp/transport.ts'
import { type Bench, type Figures, message } from '../support.ts'

/**
 * The baseline every other row is compared with, measured again before each scenario: the same
 * messages handed to the same sink by nodemailer's pooled transport (its default pool: 5
 * sessions, 100 messages each) from this process, with no Mailroom in between.
 */
export async function measureRaw(bench: Bench): Promise<Figures> {
  const transport = nodemailer.createTransport({
    ...smtpTransportOptions(bench.sink.login, await resolveSmtpHost(bench.sink.host, true), { pool: true }),
    maxConnections: 5,
    maxMessages: 100,
  })
  try {
    const figures = await bench.measure('raw nodemailer (pooled) → sink', (i) => {
      const m = message(i, bench.from)
      return transport.sendMail({ from: m.from, to: m.to, subject: m.subject, text: m.text_body })
    })
    // The service was idle: its memory is not this row's.
    return { ...figures, peakRssMiB: undefined }
  } finally {
    transport.close()
  }
}
