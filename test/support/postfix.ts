/**
 * A private Postfix for the bounce tests: Debian's `postfix`, its own config, queue and data
 * directories in a temp dir, listening on a free loopback address, port 2525 with STARTTLS
 * offered. It takes mail from loopback clients without AUTH and relays each test domain to an
 * SMTP sink (STARTTLS, then the sink's login). A sink refusing a recipient after Postfix took the
 * message makes Postfix itself write the delivery status notification to the envelope sender,
 * delivered like any other mail: to the sink routed for the sender's domain.
 */
import { execFile } from 'node:child_process'
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { ensureDebianPackage } from './debian-packages.ts'
import { candidateHosts, type SmtpSink } from './smtp-sink.ts'
import type { TlsMaterial } from './tls.ts'

const POSTFIX = '/usr/sbin/postfix'
// The Debian package creates this user and group; Postfix's daemons drop to it.
const MAIL_OWNER = 'postfix'
const PORT = 2525

const run = promisify(execFile)

export interface TestPostfix {
  /** A loopback address of its own (127.0.0.x), as the SMTP sinks have. */
  host: string
  port: typeof PORT
  /** Postfix's own log so far: what it did with each message, for a failing test to show. */
  log(): Promise<string>
  stop(): Promise<void>
}

/** Where each domain's mail goes: a sink on 587 or 2525, reached with STARTTLS and its login. */
export type PostfixRoutes = Record<string, SmtpSink>

function nexthop(sink: SmtpSink): string {
  if (sink.port === 465) throw new Error('the test Postfix relays to sinks on 587 or 2525 (STARTTLS)')
  return `[${sink.host}]:${sink.port}`
}

function mainCf(dir: string): string {
  const config = path.join(dir, 'config')
  return `compatibility_level = 3.6
queue_directory = ${dir}/queue
data_directory = ${dir}/data
mail_owner = ${MAIL_OWNER}
maillog_file = ${dir}/postfix.log
maillog_file_prefixes = ${dir}
# Not the machine's name: a sink greets with that, and Postfix would take the relay for a loop.
myhostname = postfix.mailroom.test
myorigin = $myhostname
mydestination =
alias_maps =
alias_database =
local_transport = error:no local mail here
default_transport = error:no route for this domain
transport_maps = texthash:${config}/transport
# Its one listener names its address in master.cf; no other may open.
inet_interfaces = loopback-only
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination
smtpd_peername_lookup = no
smtpd_tls_security_level = may
smtpd_tls_chain_files = ${config}/tls.pem
smtp_dns_support_level = disabled
smtp_tls_security_level = encrypt
smtp_sasl_auth_enable = yes
smtp_sasl_password_maps = texthash:${config}/sasl_passwd
smtp_sasl_security_options = noanonymous
smtp_sasl_tls_security_options = noanonymous
# A refusal (5xx) bounces at once whatever these say; a deferral is retried within seconds.
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
delay_warning_time = 0
`
}

function masterCf(host: string): string {
  const services = [
    `${host}:${PORT} inet n - n - - smtpd`,
    'cleanup unix n - n - 0 cleanup',
    'qmgr unix n - n 300 1 qmgr',
    'tlsmgr unix - - n 1000? 1 tlsmgr',
    'rewrite unix - - n - - trivial-rewrite',
    'bounce unix - - n - 0 bounce',
    'defer unix - - n - 0 bounce',
    'trace unix - - n - 0 bounce',
    'verify unix - - n - 1 verify',
    'flush unix n - n 1000? 0 flush',
    'proxymap unix - - n - - proxymap',
    'smtp unix - - n - - smtp',
    'error unix - - n - - error',
    'retry unix - - n - - error',
    'anvil unix - - n - 1 anvil',
    'scache unix - - n - 1 scache',
    'postlog unix-dgram n - n - 1 postlogd',
  ]
  return `${services.join('\n')}\n`
}

function transportMap(routes: PostfixRoutes): string {
  return Object.entries(routes)
    .map(([domain, sink]) => `${domain} smtp:${nexthop(sink)}\n`)
    .join('')
}

function passwordMap(routes: PostfixRoutes): string {
  return Object.values(routes)
    .map((sink) => `${nexthop(sink)} ${sink.username}:${sink.password}\n`)
    .join('')
}

function lookUpUser(name: string): Promise<{ uid: number; gid: number }> {
  const id = async (flag: string) => Number((await run('id', [flag, name])).stdout.trim())
  return Promise.all([id('-u'), id('-g')]).then(([uid, gid]) => ({ uid, gid }))
}

/**
 * Only root and Postfix's group may pass through the temp dir; Postfix's daemons must, to reach
 * the queue. The sinks' passwords and the key sit in `config`, readable by root alone.
 */
async function layOut(dir: string, tls: TlsMaterial, routes: PostfixRoutes): Promise<void> {
  const owner = await lookUpUser(MAIL_OWNER)
  await chown(dir, 0, owner.gid)
  await chmod(dir, 0o710)
  const config = path.join(dir, 'config')
  await mkdir(config, { mode: 0o755 })
  await mkdir(path.join(dir, 'queue'), { mode: 0o755 })
  await mkdir(path.join(dir, 'data'), { mode: 0o700 })
  await chown(path.join(dir, 'data'), owner.uid, owner.gid)
  await writeFile(path.join(config, 'main.cf'), mainCf(dir))
  await writeFile(path.join(config, 'transport'), transportMap(routes))
  await writeFile(path.join(config, 'sasl_passwd'), passwordMap(routes), { mode: 0o600 })
  await writeFile(path.join(config, 'tls.pem'), `${tls.key}\n${tls.cert}\n`, { mode: 0o600 })
}

function canListen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer()
    probe.once('error', () => resolve(false))
    probe.listen(port, host, () => probe.close(() => resolve(true)))
  })
}

/**
 * Starts Postfix on the first loopback address whose port is free, as the sinks pick theirs;
 * `postfix start` returns once the master listens. An address taken by another run between the
 * probe and Postfix's bind is skipped like one taken before.
 */
async function startOnFreeAddress(dir: string, log: () => Promise<string>): Promise<string> {
  const config = path.join(dir, 'config')
  for (const host of candidateHosts()) {
    if (!(await canListen(host, PORT))) continue
    await writeFile(path.join(config, 'master.cf'), masterCf(host))
    try {
      await run(POSTFIX, ['-c', config, 'start'])
      return host
    } catch (error) {
      if (!(await log()).includes(`bind ${host} port ${PORT}: Address already in use`)) throw error
    }
  }
  throw new Error(`no loopback address has port ${PORT} free`)
}

/**
 * Starts Postfix relaying each domain of `routes` to its sink; installs it as root when missing.
 * Root is needed: Postfix's master starts as root and its daemons drop to the `postfix` user.
 */
export async function startPostfix(tls: TlsMaterial, routes: PostfixRoutes): Promise<TestPostfix> {
  ensurePostfix()
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-postfix-'))
  const config = path.join(dir, 'config')
  const log = () => readFile(path.join(dir, 'postfix.log'), 'utf8').catch(() => '')
  const stop = async () => {
    // Nothing to stop when it never started: `postfix stop` then says so, and that is all.
    await run(POSTFIX, ['-c', config, 'stop']).catch(() => undefined)
    await rm(dir, { recursive: true, force: true })
  }
  try {
    await layOut(dir, tls, routes)
    const host = await startOnFreeAddress(dir, log)
    return { host, port: PORT, log, stop }
  } catch (error) {
    const written = await log()
    await stop()
    throw new Error(`postfix did not start: ${error instanceof Error ? error.message : error}\n${written}`)
  }
}

/** Debian's package, unconfigured: the machine gets no Postfix of its own (see .ci/run). */
function ensurePostfix(): void {
  ensureDebianPackage(POSTFIX, 'postfix', {
    debconf: ['postfix postfix/main_mailer_type select No configuration'],
    afterInstall: STOP_SYSTEM_POSTFIX,
  })
}

/** Should the package have started the machine's own Postfix anyway, it is stopped and disabled. */
const STOP_SYSTEM_POSTFIX =
  '{ postfix status >/dev/null 2>&1 && postfix stop; ' +
  '! command -v systemctl >/dev/null || systemctl disable --now postfix >/dev/null 2>&1; true; }'
