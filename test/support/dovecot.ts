/**
 * A private Dovecot IMAP server for the mailbox tests: Debian's `dovecot-imapd`, its own config,
 * users and maildirs in a temp dir, on a free loopback address: port 993 with implicit TLS and
 * 143 with STARTTLS required, both with the run's CA-signed certificate.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { ImapFlow } from 'imapflow'
import { ensureDebianPackage } from './debian-packages.ts'
import { candidateHosts } from './smtp-sink.ts'
import type { TlsMaterial } from './tls.ts'

const DOVECOT = '/usr/sbin/dovecot'
// The Debian package creates this user; Dovecot never reads or writes mail as root.
const MAIL_USER = 'dovecot'

export interface MailboxUser {
  username: string
  password: string
}

export interface TestDovecot {
  /**
   * Never 127.0.0.1: Dovecot counts a connection whose two ends share an address as secure and
   * would take a clear-text login on port 143, which a real server does not.
   */
  host: string
  /** The first of `users`. */
  user: MailboxUser
  users: MailboxUser[]
  /** Puts a raw message into `user`'s `folder` (created when missing); its UID. */
  append(user: MailboxUser, raw: string, folder?: string): Promise<number>
  stop(): Promise<void>
}

function config(dir: string, host: string): string {
  return `
instance_name = mailroom-test-${path.basename(dir)}
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/private/dovecot.log
protocols = imap
listen = ${host}
ssl = required
ssl_cert = <${dir}/private/cert.pem
ssl_key = <${dir}/private/key.pem
disable_plaintext_auth = yes
auth_mechanisms = plain login
# Running as root: the master, auth and config processes may stay root; login processes may not.
default_internal_user = root
default_internal_group = root
default_login_user = dovenull
mail_uid = ${MAIL_USER}
mail_gid = ${MAIL_USER}
first_valid_uid = 1
first_valid_gid = 1
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/private/users
}
userdb {
  driver = static
  args = home=${dir}/mail/%u
}
mail_location = maildir:~/Maildir
service imap-login {
  inet_listener imap {
    port = 143
  }
  inet_listener imaps {
    port = 993
    ssl = yes
  }
}
`
}

function passwdFile(users: MailboxUser[]): string {
  return users.map((u) => `${u.username}:{PLAIN}${u.password}::::::\n`).join('')
}

/**
 * The temp dir is closed to listing; only its `mail` subtree belongs to the mail user, who must
 * pass through it. Config, key and passwords sit in `private`, readable by root alone.
 */
async function layOut(dir: string, tls: TlsMaterial, users: MailboxUser[]): Promise<void> {
  await chmod(dir, 0o711)
  await mkdir(path.join(dir, 'private'), { mode: 0o700 })
  await mkdir(path.join(dir, 'mail'), { mode: 0o700 })
  const mailUser = os.userInfo().uid === 0 ? lookUpUser(MAIL_USER) : undefined
  if (mailUser) await chown(path.join(dir, 'mail'), mailUser.uid, mailUser.gid)
  await writeFile(path.join(dir, 'private', 'cert.pem'), tls.cert)
  await writeFile(path.join(dir, 'private', 'key.pem'), tls.key, { mode: 0o600 })
  await writeFile(path.join(dir, 'private', 'users'), passwdFile(users), { mode: 0o600 })
}

function lookUpUser(name: string): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim())
  const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim())
  return { uid, gid }
}

function canListen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer()
    probe.once('error', () => resolve(false))
    probe.listen(port, host, () => probe.close(() => resolve(true)))
  })
}

/** A loopback address other than 127.0.0.1 where 993 and 143 are both free, as the SMTP sinks pick theirs. */
async function freeLoopbackAddress(): Promise<string> {
  for (const host of candidateHosts()) {
    if ((await canListen(host, 993)) && (await canListen(host, 143))) return host
  }
  throw new Error('no loopback address has ports 993 and 143 free')
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

async function waitForListener(child: ChildProcess, host: string, port: number): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) throw new Error(`dovecot exited with ${child.exitCode}`)
    if (await accepts(host, port)) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`dovecot did not listen on ${host}:${port}`)
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    child.once('exit', () => resolve())
    child.kill('SIGTERM')
  })
}

/** Logs in over implicit TLS, trusting only the run's CA, as a mail client would. */
export function imapClient(server: TestDovecot, user: MailboxUser, tls: TlsMaterial): ImapFlow {
  return new ImapFlow({
    host: server.host,
    port: 993,
    secure: true,
    auth: { user: user.username, pass: user.password },
    tls: { ca: tls.caPem, servername: 'localhost' },
    logger: false,
  })
}

async function appendMessage(
  server: TestDovecot,
  tls: TlsMaterial,
  user: MailboxUser,
  raw: string,
  folder: string,
): Promise<number> {
  const client = imapClient(server, user, tls)
  await client.connect()
  try {
    if (folder !== 'INBOX') await client.mailboxCreate(folder).catch(() => undefined)
    const appended = await client.append(folder, raw)
    if (!appended || appended.uid === undefined) throw new Error(`APPEND to ${folder} failed`)
    return appended.uid
  } finally {
    await client.logout()
  }
}

/**
 * Starts Dovecot with these users (a name alone gets a random password); installs it as root
 * when missing.
 */
export async function startDovecot(
  tls: TlsMaterial,
  accounts: [string | MailboxUser, ...(string | MailboxUser)[]] = ['reports@example.com'],
): Promise<TestDovecot> {
  ensureDebianPackage(DOVECOT, 'dovecot-imapd')
  const withPassword = (user: string | MailboxUser): MailboxUser =>
    typeof user === 'string' ? { username: user, password: randomBytes(12).toString('base64url') } : user
  const [head, ...rest] = accounts
  const first = withPassword(head)
  const users = [first, ...rest.map(withPassword)]
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-dovecot-'))
  const host = await freeLoopbackAddress()
  await layOut(dir, tls, users)
  await writeFile(path.join(dir, 'private', 'dovecot.conf'), config(dir, host))
  const child = spawn(DOVECOT, ['-F', '-c', path.join(dir, 'private', 'dovecot.conf')], {
    stdio: 'ignore',
  })
  const server: TestDovecot = {
    host,
    user: first,
    users,
    append: (user, raw, folder = 'INBOX') => appendMessage(server, tls, user, raw, folder),
    async stop() {
      await stopChild(child)
      await rm(dir, { recursive: true, force: true })
    },
  }
  try {
    await waitForListener(child, host, 993)
    await waitForListener(child, host, 143)
  } catch (error) {
    await server.stop()
    throw error
  }
  return server
}
