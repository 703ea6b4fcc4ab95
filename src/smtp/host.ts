import { HostAddressError, type ResolvedHost, resolvePublicHost } from '../net/public-address.ts'

/** The SMTP host cannot be used: it does not resolve, or it points inside the network. */
export class SmtpHostError extends Error {
  override name = 'SmtpHostError'
}

export type ResolvedSmtpHost = ResolvedHost

const SMTP_HOST = { label: 'SMTP host', setting: 'MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS' }

/** Resolves an SMTP host once and checks its addresses (see resolvePublicHost); the caller connects to `address`. */
export async function resolveSmtpHost(host: string, allowPrivate: boolean): Promise<ResolvedSmtpHost> {
  try {
    return await resolvePublicHost(host, allowPrivate, SMTP_HOST)
  } catch (error) {
    if (error instanceof HostAddressError) throw new SmtpHostError(error.message)
    throw error
  }
}
