import { createHash } from 'node:crypto'
import nodemailer, { type Transporter } from 'nodemailer'
import { resolveSmtpHost } from './host.ts'
import { openPassword } from './secret-box.ts'
import { smtpTransportOptions } from './transport.ts'

/** What a pooled session needs of a connection. */
export interface SmtpAccount {
  id: number
  host: string
  port: number
  username: string
  password_encrypted: string
}

interface Entry {
  fingerprint: string
  transporter: Promise<Transporter>
}

/**
 * One pooled nodemailer transport per connection, reused across requests and rebuilt when the
 * connection's login changes. A process holds one pool; `close` ends every SMTP session.
 */
export class TransportPool {
  private readonly entries = new Map<number, Entry>()

  constructor(
    private readonly secret: string,
    private readonly allowPrivateHosts: boolean,
  ) {}

  get(connection: SmtpAccount): Promise<Transporter> {
    const fingerprint = fingerprintOf(connection)
    const current = this.entries.get(connection.id)
    if (current?.fingerprint === fingerprint) return current.transporter
    if (current)
      void current.transporter.then(
        (t) => t.close(),
        () => {},
      )
    const transporter = this.open(connection)
    this.entries.set(connection.id, { fingerprint, transporter })
    // A failed DNS check must not stick: the next send tries again.
    transporter.catch(() => {
      if (this.entries.get(connection.id)?.transporter === transporter) this.entries.delete(connection.id)
    })
    return transporter
  }

  async close(): Promise<void> {
    const all = [...this.entries.values()]
    this.entries.clear()
    await Promise.allSettled(all.map(async (entry) => (await entry.transporter).close()))
  }

  private async open(connection: SmtpAccount): Promise<Transporter> {
    // Resolved once per transport: the socket goes to the address that passed the check.
    const resolved = await resolveSmtpHost(connection.host, this.allowPrivateHosts)
    const login = {
      host: connection.host,
      port: connection.port,
      username: connection.username,
      password: openPassword(this.secret, connection.password_encrypted),
    }
    return nodemailer.createTransport(smtpTransportOptions(login, resolved, { pool: true }))
  }
}

/** Changes whenever anything the SMTP session depends on changes (a new password gets a new IV). */
function fingerprintOf(c: SmtpAccount): string {
  return createHash('sha256')
    .update(`${c.host}\n${c.port}\n${c.username}\n${c.password_encrypted}`)
    .digest('hex')
}
