import type { Db } from './sql.ts'

/** The connection_mailboxes table: every statement that reads or writes it. */

export type MailboxPort = 993 | 143

/** A connection's mailbox as the owner sees it; the password never leaves the database. */
export interface MailboxView {
  connection_id: number
  host: string
  port: MailboxPort
  /** null: the connection's SMTP login is used. */
  username: string | null
  same_login_as_smtp: boolean
  folder: string
  move_handled: boolean
  created_at: string
  updated_at: string
  /** When its folder was last read; null before the first reading. */
  read_at: string | null
  /** Why the last reading could not log in or open the folder; null once a reading succeeds. */
  failure: string | null
  failed_at: string | null
  /** Reports read that named no email of the account, and other mail read: both left in the folder. */
  unmatched_reports: number
  other_messages: number
}

export interface MailboxRow {
  host: string
  port: MailboxPort
  /** Both null: the connection's SMTP login. */
  username: string | null
  passwordSealed: string | null
  folder: string
  moveHandled: boolean
}

const VIEW_COLUMNS = (db: Db) => db`
  connection_id, host, port, username, username is null as same_login_as_smtp, folder, move_handled,
  api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at,
  api_timestamp(read_at) as read_at, failure, api_timestamp(failed_at) as failed_at, unmatched_reports,
  other_messages`

/**
 * Sets the connection's mailbox, replacing the one it had. Its login was just tested, so an
 * earlier failure is forgotten; another server, login or folder is read from its start.
 */
export async function upsertMailbox(db: Db, connectionId: number, m: MailboxRow): Promise<MailboxView> {
  const [row] = await db<MailboxView[]>`
    insert into connection_mailboxes (connection_id, host, port, username, password_encrypted, folder, move_handled)
    values (${connectionId}, ${m.host}, ${m.port}, ${m.username}, ${m.passwordSealed}, ${m.folder}, ${m.moveHandled})
    on conflict (connection_id) do update set
      host = excluded.host, port = excluded.port, username = excluded.username,
      password_encrypted = excluded.password_encrypted, folder = excluded.folder,
      move_handled = excluded.move_handled, updated_at = mailroom_now(), failure = null, failed_at = null,
      uidvalidity = case when (connection_mailboxes.host, connection_mailboxes.port, connection_mailboxes.username,
                               connection_mailboxes.folder)
                              is not distinct from (excluded.host, excluded.port, excluded.username, excluded.folder)
                         then connection_mailboxes.uidvalidity end
    returning ${VIEW_COLUMNS(db)}`
  if (!row) throw new Error('the mailbox was not recorded')
  return row
}

export async function selectMailbox(db: Db, connectionId: number): Promise<MailboxView | undefined> {
  const [row] = await db<MailboxView[]>`
    select ${VIEW_COLUMNS(db)} from connection_mailboxes where connection_id = ${connectionId}`
  return row
}

/** Whether the connection had a mailbox to remove. */
export async function deleteMailbox(db: Db, connectionId: number): Promise<boolean> {
  const rows = await db`delete from connection_mailboxes where connection_id = ${connectionId} returning 1`
  return rows.length > 0
}

/** The mailbox's login, sealed, with the connection's SMTP login filled in where it is the same. */
export interface SealedMailboxLogin {
  host: string
  port: MailboxPort
  username: string
  password_encrypted: string
  folder: string
}

export async function sealedMailboxLogin(
  db: Db,
  connectionId: number,
): Promise<SealedMailboxLogin | undefined> {
  const [row] = await db<SealedMailboxLogin[]>`
    select m.host, m.port, coalesce(m.username, c.username) as username,
           coalesce(m.password_encrypted, c.password_encrypted) as password_encrypted, m.folder
    from connection_mailboxes m join connections c on c.id = m.connection_id
    where m.connection_id = ${connectionId}`
  return row
}

/** The connection's SMTP login, sealed, for a mailbox that uses the same. */
export async function sealedSmtpLogin(
  db: Db,
  connectionId: number,
): Promise<{ username: string; password_encrypted: string } | undefined> {
  const [row] = await db<{ username: string; password_encrypted: string }[]>`
    select username, password_encrypted from connections where id = ${connectionId}`
  return row
}

/** A mailbox to read: its login (sealed), where the last reading stopped, and its account. */
export interface MailboxToRead extends SealedMailboxLogin {
  account_id: number
  move_handled: boolean
  /** Null before the first reading (as text: a 32-bit unsigned number). */
  uidvalidity: string | null
  last_uid: number
}

export async function mailboxToRead(db: Db, connectionId: number): Promise<MailboxToRead | undefined> {
  const [row] = await db<MailboxToRead[]>`
    select c.account_id, m.host, m.port, coalesce(m.username, c.username) as username,
           coalesce(m.password_encrypted, c.password_encrypted) as password_encrypted, m.folder,
           m.move_handled, m.uidvalidity::text as uidvalidity, m.last_uid::int as last_uid
    from connection_mailboxes m join connections c on c.id = m.connection_id
    where m.connection_id = ${connectionId}`
  return row
}

/** What one reading did: where it stopped, and the mail it left in the folder. */
export interface ReadingDone {
  uidValidity: string | null
  lastUid: number
  unmatched: number
  other: number
}

/** Records a reading that logged in: its cursor and counts; a login failure is over. */
export async function recordMailboxRead(db: Db, connectionId: number, reading: ReadingDone): Promise<void> {
  await db`
    update connection_mailboxes set
      uidvalidity = ${reading.uidValidity}::bigint, last_uid = ${reading.lastUid},
      unmatched_reports = unmatched_reports + ${reading.unmatched},
      other_messages = other_messages + ${reading.other},
      read_at = mailroom_now(), failure = null, failed_at = null
    where connection_id = ${connectionId}`
}

/** Records why the mailbox could not be read (the server's words, never the password). */
export async function recordMailboxFailure(db: Db, connectionId: number, reason: string): Promise<void> {
  await db`
    update connection_mailboxes set failure = ${reason}, failed_at = mailroom_now()
    where connection_id = ${connectionId}`
}
