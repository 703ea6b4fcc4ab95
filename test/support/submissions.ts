/**
 * Messages submitted as the SMTP relay's door hands them over (acceptSubmission), without the
 * door: the caller as its API key authenticates, the connection MAIL FROM names.
 */
import { authenticate } from '../../src/keys/keys.ts'
import { type AcceptedSubmission, acceptSubmission, relayConnection } from '../../src/sending/submission.ts'
import type { TestApp } from './app.ts'
import type { Sender } from './sending.ts'

export interface Submission {
  /** RCPT TO; the message's own To by default. */
  recipients: string[]
  smtpUtf8?: boolean
}

/** A message's lines joined as SMTP carries them (CRLF). */
export function crlf(...lines: string[]): string {
  return lines.join('\r\n')
}

/** Submits `message` for `sender`'s key, from its connection's address. */
export async function submitted(
  app: TestApp,
  sender: Pick<Sender, 'key' | 'from'>,
  message: string | Buffer,
  { recipients, smtpUtf8 = false }: Submission,
): Promise<AcceptedSubmission> {
  const caller = await authenticate(app.services.sql, sender.key)
  if (!caller) throw new Error('the sender key does not authenticate')
  const connection = await relayConnection(app.services, caller, sender.from)
  return acceptSubmission(app.services, {
    caller,
    connection,
    mailFrom: sender.from,
    recipients,
    message: Buffer.isBuffer(message) ? message : Buffer.from(message),
    smtpUtf8,
    requestId: 'relay-test-request',
  })
}
