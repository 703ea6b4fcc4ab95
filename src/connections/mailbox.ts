import { AppError } from '../app-error.ts'
import {
  deleteMailbox,
  type MailboxPort,
  type MailboxView,
  sealedMailboxLogin,
  sealedSmtpLogin,
  selectMailbox,
  upsertMailbox,
} from '../db/mailboxes.ts'
import type { Db, Sql } from '../db/sql.ts'
import { IMAP_PORTS, type ImapLogin, verifyImapLogin } from '../imap/login.ts'
import { openPassword, sealPassword } from '../smtp/secret-box.ts'
import type { ConnectionDeps } from './connections.ts'

export type { MailboxView }

export interface MailboxInput {
  host: string
  port: number
  /** Both omitted with `sameLoginAsSmtp`: the connection's SMTP username and password. */
  username?: string
  password?: string
  sameLoginAsSmtp?: boolean
  /** INBOX when omitted. */
  folder?: string
  /** On when omitted: handled reports are moved out of the folder. */
  moveHandled?: boolean
}

const MAX_FOLDER = 255
const MAX_PASSWORD = 1024

/**
 * Tests the mailbox's login and folder against its server, then saves it (replacing the one the
 * connection had); nothing is saved when the test fails.
 */
export async function setMailbox(
  deps: ConnectionDeps,
  connectionId: number,
  input: MailboxInput,
): Promise<MailboxView> {
  const settings = checkSettings(input)
  const smtp = await smtpLoginOf(deps.sql, connectionId)
  const own = ownLogin(input)
  const login = own
    ? { ...settings.server, ...own }
    : {
        ...settings.server,
        username: smtp.username,
        password: openPassword(deps.secret, smtp.password_encrypted),
      }
  await verify(deps, login, settings.folder)
  return upsertMailbox(deps.sql, connectionId, {
    ...settings.server,
    username: own ? own.username : null,
    passwordSealed: own ? sealPassword(deps.secret, own.password) : null,
    folder: settings.folder,
    moveHandled: input.moveHandled ?? true,
  })
}

/** The connection's mailbox, or null when it has none. */
export async function getMailbox(db: Db, connectionId: number): Promise<MailboxView | null> {
  await smtpLoginOf(db, connectionId)
  return (await selectMailbox(db, connectionId)) ?? null
}

/** Stops reading the connection's mailbox; its settings and password are removed. */
export async function clearMailbox(sql: Sql, connectionId: number): Promise<{ cleared: boolean }> {
  await smtpLoginOf(sql, connectionId)
  return { cleared: await deleteMailbox(sql, connectionId) }
}

/** Tests the saved mailbox's login and folder again. */
export async function testMailbox(deps: ConnectionDeps, connectionId: number): Promise<{ ok: true }> {
  await smtpLoginOf(deps.sql, connectionId)
  const saved = await sealedMailboxLogin(deps.sql, connectionId)
  if (!saved) throw invalid(`connection ${connectionId} has no mailbox`)
  const login = {
    host: saved.host,
    port: saved.port,
    username: saved.username,
    password: openPassword(deps.secret, saved.password_encrypted),
  }
  await verify(deps, login, saved.folder)
  return { ok: true }
}

async function verify(deps: ConnectionDeps, login: ImapLogin, folder: string): Promise<void> {
  try {
    await verifyImapLogin(login, folder, deps.config.allowPrivateSmtpHosts)
  } catch (error) {
    throw new AppError('MAILBOX_LOGIN_FAILED', error instanceof Error ? error.message : String(error), {
      cause: error,
    })
  }
}

async function smtpLoginOf(db: Db, connectionId: number) {
  const smtp = await sealedSmtpLogin(db, connectionId)
  if (!smtp) throw new AppError('UNKNOWN_CONNECTION', `no connection with id ${connectionId}`)
  return smtp
}

function checkSettings(input: MailboxInput): { server: { host: string; port: MailboxPort }; folder: string } {
  const host = input.host.trim()
  if (!host) throw invalid('the mailbox host is required')
  const port = IMAP_PORTS.find((p) => p === input.port)
  if (port === undefined)
    throw invalid(`the mailbox port must be 993 (TLS) or 143 (STARTTLS), not ${input.port}`)
  const folder = (input.folder ?? 'INBOX').trim()
  // A control character in a folder name could end the IMAP command it is sent in.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what is refused
  if (!folder || folder.length > MAX_FOLDER || /[\u0000-\u001f\u007f]/.test(folder)) {
    throw invalid(`the folder is a name of 1 to ${MAX_FOLDER} characters without control characters`)
  }
  return { server: { host, port }, folder }
}

/** The mailbox's own login, or undefined when it is the SMTP one. */
function ownLogin(input: MailboxInput): { username: string; password: string } | undefined {
  if (input.sameLoginAsSmtp) {
    if (input.username !== undefined || input.password !== undefined) {
      throw invalid('give either a mailbox username and password or "the same login as SMTP", not both')
    }
    return undefined
  }
  const username = input.username?.trim()
  if (!username || !input.password) {
    throw invalid('the mailbox username and password are required (or "the same login as SMTP")')
  }
  if (input.password.length > MAX_PASSWORD)
    throw invalid(`the mailbox password is at most ${MAX_PASSWORD} characters`)
  return { username, password: input.password }
}

function invalid(message: string) {
  return new AppError('INVALID_CONNECTION', message)
}
