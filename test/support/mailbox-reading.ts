/**
 * What the tests of reading a connection's mailbox share: a sender whose connection has a
 * mailbox on the test Dovecot, an email sent through it, the folder's messages as a mail client
 * sees them, and readings run as the worker runs them.
 */
import { inject } from 'vitest'
import { type MailboxReading, readMailbox } from '../../src/bounces/mailbox-reading.ts'
import { setMailbox } from '../../src/connections/mailbox.ts'
import type { Logger } from '../../src/log.ts'
import type { TestApp } from './app.ts'
import { imapClient, type MailboxUser, type TestDovecot } from './dovecot.ts'
import { postSend, type Sender, startSender } from './sending.ts'

export interface MailboxSender extends Sender {
  mailbox: MailboxUser
}

/** A fresh account and connection whose mailbox is `user`'s INBOX on `server`. */
export async function senderWithMailbox(
  app: TestApp,
  server: TestDovecot,
  user: MailboxUser,
  options: { moveHandled?: boolean } = {},
): Promise<MailboxSender> {
  const sender = await startSender(app, 'mailbox', { plan: 'pro' })
  await setMailbox(app.services, sender.connectionId, {
    host: server.host,
    port: 993,
    username: user.username,
    password: user.password,
    ...options,
  })
  return { ...sender, mailbox: user }
}

/** Sends an email through the sender's connection; its outbox ID and Message-ID. */
export async function sentEmail(
  app: TestApp,
  sender: Sender,
  body: Record<string, unknown>,
): Promise<{ id: number; messageId: string }> {
  const reply = await postSend(app, sender.key, { subject: 'Hello', text_body: 'Hi', ...body })
  if (reply.status !== 200) throw new Error(`send refused: ${reply.status} ${JSON.stringify(reply.body)}`)
  return { id: reply.body.outboxId as number, messageId: reply.body.messageId as string }
}

/** One reading of the connection's mailbox, as the worker's task does it. */
export function readOnce(
  app: TestApp,
  connectionId: number,
  log: Logger = app.services.log,
): Promise<MailboxReading | null> {
  const { sql, secret, metrics } = app.services
  return readMailbox({ sql, secret, metrics, log, allowPrivate: true }, connectionId)
}

export interface FolderEntry {
  subject: string
  seen: boolean
}

/** The messages of `user`'s `folder` (parts joined by the server's delimiter), oldest first; [] when it does not exist. */
export async function folderMessages(
  server: TestDovecot,
  user: MailboxUser,
  folder: string | string[] = 'INBOX',
): Promise<FolderEntry[]> {
  const client = imapClient(server, user, inject('tls'))
  await client.connect()
  try {
    const path = Array.isArray(folder) ? folder.join(client.namespace?.delimiter ?? '/') : folder
    const exists = (await client.list()).some((m) => m.path === path)
    if (!exists) return []
    const lock = await client.getMailboxLock(path, { readOnly: true })
    try {
      const entries: FolderEntry[] = []
      if ((client.mailbox ? client.mailbox.exists : 0) === 0) return entries
      for await (const m of client.fetch('1:*', { envelope: true, flags: true })) {
        entries.push({ subject: m.envelope?.subject ?? '', seen: m.flags?.has('\\Seen') ?? false })
      }
      return entries
    } finally {
      lock.release()
    }
  } finally {
    await client.logout()
  }
}

/** The value of a counter of this process's metrics with exactly these labels (0 when never counted). */
export async function counted(app: TestApp, name: string, labels: Record<string, string>): Promise<number> {
  const metric = await app.services.metrics.registry.getSingleMetric(name)?.get()
  const value = metric?.values.find((v) =>
    Object.entries(labels).every(
      ([key, want]) => String((v.labels as Record<string, unknown>)[key]) === want,
    ),
  )
  return value?.value ?? 0
}
