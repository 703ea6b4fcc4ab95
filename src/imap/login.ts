import { ImapFlow } from 'imapflow'
import { HostAddressError, resolvePublicHost } from '../net/public-address.ts'

/** 993 with TLS from the first byte, 143 with STARTTLS, which is required (never clear text). */
export type ImapPort = 993 | 143
export const IMAP_PORTS: readonly ImapPort[] = [993, 143]

export interface ImapLogin {
  host: string
  port: ImapPort
  username: string
  password: string
}

/** The mailbox cannot be used: its host is refused, it cannot be reached, or the login or folder is refused. */
export class ImapLoginError extends Error {
  override name = 'ImapLoginError'
}

// A connection's mailbox is one more of the owner's mail servers: the setting that lets its SMTP
// server sit on a private network lets its IMAP server sit there too.
const IMAP_HOST = { label: 'IMAP host', setting: 'MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS' }
const TIMEOUT_MS = 20_000

interface ImapFailure {
  responseText?: string
  serverResponseCode?: string
  authenticationFailed?: boolean
  tlsFailed?: boolean
  code?: string
}

/** What the owner is told: the server's own words where it gave any, never the password. */
export function imapReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const failure = error as Error & ImapFailure
  if (failure.authenticationFailed) {
    return `the IMAP server refused the login: ${failure.responseText || 'authentication failed'}`
  }
  if (failure.responseText) return `the IMAP server answered: ${failure.responseText}`
  if (failure.tlsFailed) return `TLS could not be set up: ${failure.message}`
  return failure.code && !failure.message.includes(failure.code)
    ? `${failure.message} (${failure.code})`
    : failure.message
}

/**
 * Logs in to the mailbox: connects to the address the host check approved, and verifies the
 * certificate against the host name the owner gave.
 */
export async function openImap(login: ImapLogin, allowPrivate: boolean): Promise<ImapFlow> {
  let resolved: Awaited<ReturnType<typeof resolvePublicHost>>
  try {
    resolved = await resolvePublicHost(login.host, allowPrivate, IMAP_HOST)
  } catch (error) {
    if (error instanceof HostAddressError) throw new ImapLoginError(error.message)
    throw error
  }
  const client = new ImapFlow({
    host: resolved.address,
    port: login.port,
    secure: login.port === 993,
    ...(login.port === 143 ? { doSTARTTLS: true } : {}),
    ...(resolved.servername === undefined ? {} : { servername: resolved.servername }),
    auth: { user: login.username, pass: login.password },
    logger: false,
    disableAutoIdle: true,
    connectionTimeout: TIMEOUT_MS,
    greetingTimeout: TIMEOUT_MS,
    socketTimeout: TIMEOUT_MS,
  })
  // A socket error after connect() is reported on the next command; unheard it would crash.
  client.on('error', () => {})
  try {
    await client.connect()
  } catch (error) {
    client.close()
    throw new ImapLoginError(imapReason(error), { cause: error })
  }
  return client
}

/** Logs in and opens `folder` read-only, then logs out: the test a mailbox passes before it is saved. */
export async function verifyImapLogin(
  login: ImapLogin,
  folder: string,
  allowPrivate: boolean,
): Promise<void> {
  const client = await openImap(login, allowPrivate)
  try {
    await client.mailboxOpen(folder, { readOnly: true })
  } catch (error) {
    throw new ImapLoginError(`the folder "${folder}" cannot be opened: ${imapReason(error)}`, {
      cause: error,
    })
  } finally {
    await client.logout().catch(() => client.close())
  }
}
