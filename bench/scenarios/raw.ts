import nodemailer from 'nodemailer'
import { resolveSmtpHost } from '../../src/smtp/host.ts'
import { smtpTransportOptions } from '../../src/smtp/transport.ts'
import { type Bench, type Figures, message } from '../support.ts'

/**
 * The baseline every other row is compared with, measured again before and after each scenario
 * (see bracketing): the same
 * messages handed to the same sink by nodemailer's pooled transport (its default pool: 5
 * sessions, 100 messages each) from this process, with no Mailroom in between.
 */
export async function measureRaw(bench: Bench): Promise<Figures> {
  const transport = nodemailer.createTransport({
    ...smtpTransportOptions(bench.sink.login, await resolveSmtpHost(bench.sink.host, true), {
      pool: true,
      idleMs: 20_000,
    }),
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

/** Raw measured before and after a scenario, as one row: the messages of both, their time and CPU. */
export function bracketing(before: Figures, after: Figures): Figures {
  const count = before.count + after.count
  const weighted = (b: number, a: number) => (b * before.count + a * after.count) / count
  const [b, a] = [before.cpuMs, after.cpuMs]
  return {
    name: 'raw nodemailer (pooled), before + after',
    count,
    seconds: before.seconds + after.seconds,
    latencies: [...before.latencies, ...after.latencies],
    ...(b && a
      ? {
          cpuMs: {
            service: weighted(b.service, a.service),
            postgres: weighted(b.postgres, a.postgres),
            bench: weighted(b.bench, a.bench),
          },
        }
      : {}),
  }
}
