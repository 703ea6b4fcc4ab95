/**
 * SMTP hosts that lead inside the network are refused by default, however the
 * address is spelled, through what an owner or operator actually uses (the dashboard's and the
 * operator command's connection form, and sending through a connection saved earlier); and a
 * DNS answer that changes between the check and the connection cannot steer the socket: the
 * service connects to the address it checked.
 *
 * Where the socket goes is observed at node:net (every SMTP connection attempt's target is
 * recorded), and the DNS answers for one test name are scripted at node:dns (every way Node
 * and nodemailer resolve: lookup, the promise API and resolvers), so the proofs hold wherever
 * the check lives in the source.
 */
import dns from 'node:dns'
import net from 'node:net'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { registerCommands } from '../../src/cli/commands.ts'
import { runCli } from '../../src/cli/program.ts'
import { addConnection } from '../../src/connections/connections.ts'
import { createKey } from '../../src/keys/keys.ts'
import { useTestApp } from '../support/app.ts'
import { signedIn, textOf } from '../support/dashboard.ts'
import { postSend, type Reply } from '../support/sending.ts'
import type { SmtpSink } from '../support/smtp-sink.ts'

// The default: MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS unset.
const app = useTestApp({ allowPrivateSmtpHosts: false })

const PORT = 2525
/** A public address that stands for a provider on the internet; the test's network routes it to a sink. */
const PUBLIC = '93.184.216.34'
/** The name the scripted DNS answers for (the run's certificate is valid for it). */
const NAME = 'smtp.test'

/** Loopback, private, link-local, unique-local, and the ways of writing them. */
const INSIDE = [
  ['loopback', '127.0.0.1'],
  ['loopback, decimal', '2130706433'],
  ['loopback, octal', '0177.0.0.1'],
  ['loopback, octal as one number', '017700000001'],
  ['loopback, hex', '0x7f.0.0.1'],
  ['loopback, hex as one number', '0x7f000001'],
  ['loopback, short', '127.1'],
  ['unspecified, as one number', '0'],
  ['private', '10.0.0.1'],
  ['private, short', '10.1'],
  ['private, hex', '0x0a000001'],
  ['private 172.16/12', '172.16.0.1'],
  ['private 192.168/16', '192.168.1.1'],
  ['carrier-grade NAT', '100.64.0.1'],
  ['link-local (cloud metadata)', '169.254.169.254'],
  ['IPv6 loopback', '::1'],
  ['IPv6 loopback, bracketed', '[::1]'],
  ['IPv4-mapped loopback', '::ffff:127.0.0.1'],
  ['IPv4-mapped loopback, hex', '::ffff:7f00:1'],
  ['IPv4-mapped metadata, hex, bracketed', '[::ffff:a9fe:a9fe]'],
  ['NAT64 loopback', '64:ff9b::7f00:1'],
  ['NAT64 loopback, dotted', '64:ff9b::127.0.0.1'],
  ['6to4 loopback', '2002:7f00:1::1'],
  ['6to4 private', '2002:a00:1::1'],
  ['IPv6 link-local', 'fe80::1'],
  ['IPv6 link-local with a zone', 'fe80::1%lo'],
  ['unique-local', 'fc00::1'],
  ['unique-local fd00::/8', 'fd12:3456:789a::1'],
  ['a name for loopback', 'localhost'],
] as const

// --- The network, observed and scripted ----------------------------------------------------------

/** Hosts SMTP connections were opened to (before any redirection), in order. */
let attempts: string[] = []
/** Where the test's network sends each public address. */
const routes = new Map<string, string>()
/** What the scripted name resolves to, lookup after lookup. */
let answers: () => string = () => PUBLIC

beforeEach(() => {
  attempts = []
  routes.clear()
  const connect = net.connect
  vi.spyOn(net, 'connect').mockImplementation(((...args: unknown[]) => {
    const [options, listener] = args as [net.NetConnectOpts & { host?: string; port?: number }, () => void]
    if (typeof options !== 'object' || options.port !== PORT)
      return (connect as (...a: unknown[]) => net.Socket)(...args)
    attempts.push(options.host ?? '')
    const routed = routes.get(options.host ?? '')
    return connect(routed ? { ...options, host: routed } : options, listener)
  }) as typeof net.connect)
  scriptName()
})

afterEach(() => {
  vi.restoreAllMocks()
})

/** Makes NAME resolve to `answers()` in every API Node offers; other names resolve as usual. */
function scriptName(): void {
  const family = (address: string) => net.isIP(address) || 4
  const { lookup } = dns
  vi.spyOn(dns, 'lookup').mockImplementation(((host: string, ...rest: unknown[]) => {
    const callback = rest.at(-1) as (...a: unknown[]) => void
    const options = (typeof rest[0] === 'object' ? rest[0] : {}) as { all?: boolean }
    if (host !== NAME) return (lookup as (...a: unknown[]) => void)(host, ...rest)
    const address = answers()
    setImmediate(() =>
      options.all
        ? callback(null, [{ address, family: family(address) }])
        : callback(null, address, family(address)),
    )
  }) as typeof dns.lookup)
  const promiseLookup = dns.promises.lookup
  vi.spyOn(dns.promises, 'lookup').mockImplementation((async (host: string, options?: { all?: boolean }) => {
    if (host !== NAME) return promiseLookup(host, options as dns.LookupAllOptions)
    const address = answers()
    return options?.all ? [{ address, family: family(address) }] : { address, family: family(address) }
  }) as typeof dns.promises.lookup)
  for (const [method, wanted] of [
    ['resolve4', 4],
    ['resolve6', 6],
  ] as const) {
    for (const target of [dns, dns.Resolver.prototype]) {
      const original = target[method] as (...a: unknown[]) => void
      vi.spyOn(target, method).mockImplementation(function (this: unknown, host: string, ...rest: unknown[]) {
        const callback = rest.at(-1) as (...a: unknown[]) => void
        if (host !== NAME) return original.call(this, host, ...rest)
        const address = answers()
        setImmediate(() =>
          family(address) === wanted
            ? callback(null, [address])
            : callback(Object.assign(new Error(`${method} ENODATA ${host}`), { code: dns.NODATA })),
        )
      } as never)
    }
  }
}

// --- Owners and operators -----------------------------------------------------------------------

async function addInDashboard(host: string) {
  const { browser, account } = await signedIn(app, { plan: 'pro' })
  await browser.get('/dashboard/connections')
  const page = await browser.post('/dashboard/connections', {
    host,
    port: String(PORT),
    username: 'owner',
    password: 'an SMTP password',
    from: 'owner@example.com',
  })
  const [saved] = await app.services.sql<{ n: number }[]>`
    select count(*)::int as n from connections where account_id = ${account.id}`
  return { page, accountId: account.id, saved: saved?.n }
}

async function addWithOperatorCommand(accountId: number, host: string) {
  const run = { code: -1, stderr: '' }
  run.code = await runCli(
    [
      'connection',
      'add',
      '--account',
      String(accountId),
      '--host',
      host,
      '--port',
      String(PORT),
      '--username',
      'u',
      '--password-stdin',
      '--from',
      `op${accountId}@example.com`,
    ],
    {
      stdout: () => {},
      stderr: (text) => {
        run.stderr += text
      },
      stdin: async () => 'an SMTP password',
      open: async () => ({ services: app.services, close: async () => {} }),
    },
    registerCommands,
  )
  return run
}

const PRIVATE_REFUSAL = /resolves to a private address.*MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS/

/**
 * An account with a connection to `sink`, saved as an operator did while
 * MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS was set (or while its name still resolved elsewhere), and a key.
 */
async function savedEarlier(sink: SmtpSink, host = sink.host) {
  const { account } = await signedIn(app, { plan: 'pro' })
  const allowing = { ...app.services, config: { ...app.services.config, allowPrivateSmtpHosts: true } }
  const connection = await addConnection(allowing, {
    accountId: account.id,
    ...sink.login,
    from: `saved${account.id}@example.com`,
    rate: 6000,
  })
  await app.services.sql`update connections set host = ${host} where id = ${connection.id}`
  const { key } = await createKey(app.services.sql, { accountId: account.id, name: 'k' })
  return { key, connectionId: connection.id }
}

const message = { to: 'reader@example.com', subject: 'Hello', text_body: 'Hello' }

function expectRefusedSend(reply: Reply): void {
  expect(reply.status).toBe(500)
  expect(reply.body).toEqual({ code: 'INTERNAL_ERROR', message: expect.stringMatching(PRIVATE_REFUSAL) })
}

// --- The proofs ---------------------------------------------------------------------------------

describe('a connection to an address inside the network', () => {
  it.each(INSIDE)(
    '%s (%s): refused in the dashboard, nothing saved, no socket opened',
    async (_what, host) => {
      const { page, saved } = await addInDashboard(host)
      expect(page.status).toBe(400)
      expect(textOf(page.html)).toMatch(PRIVATE_REFUSAL)
      expect(saved).toBe(0)
      expect(attempts).toEqual([])
    },
  )

  it.each(INSIDE)('%s (%s): refused by the operator command', async (_what, host) => {
    const { account } = await signedIn(app, { plan: 'pro' })
    const run = await addWithOperatorCommand(account.id, host)
    expect(run.code).not.toBe(0)
    expect(run.stderr).toMatch(PRIVATE_REFUSAL)
    expect(attempts).toEqual([])
  })

  it.each(INSIDE)('%s (%s): a connection saved earlier with it sends nothing', async (_what, host) => {
    const sink = await app.sink({ port: PORT })
    const { key } = await savedEarlier(sink, host)
    const connectionsBefore = sink.connections
    attempts = []
    expectRefusedSend(await postSend(app, key, message))
    expect(attempts).toEqual([])
    expect(sink.connections).toBe(connectionsBefore)
    expect(sink.messages).toEqual([])
  })

  it('a name that resolves inside the network: refused, and so is a send once its answer changes', async () => {
    answers = () => '10.0.0.5'
    const { page, saved } = await addInDashboard(NAME)
    expect(textOf(page.html)).toMatch(/SMTP host smtp\.test resolves to a private address \(10\.0\.0\.5\)/)
    expect(saved).toBe(0)
    // Saved while it answered a public address; now it answers a private one.
    const provider = await app.sink({ port: PORT })
    routes.set(PUBLIC, provider.host)
    answers = () => PUBLIC
    const { key } = await savedEarlier(provider, NAME)
    answers = () => provider.host
    attempts = []
    expectRefusedSend(await postSend(app, key, message))
    expect(attempts).toEqual([])
    expect(provider.messages).toEqual([])
  })
})

describe('DNS rebinding: an answer that changes between the check and the connection', () => {
  /** Public on the first lookup, the internal server's address on every later one. */
  function rebinding(internal: SmtpSink): void {
    let lookups = 0
    answers = () => (++lookups === 1 ? PUBLIC : internal.host)
  }

  it('adding a connection connects to the public address it checked, never to the internal one', async () => {
    const provider = await app.sink({ port: PORT })
    const internal = await app.sink({ port: PORT })
    routes.set(PUBLIC, provider.host)
    rebinding(internal)
    const { browser, account } = await signedIn(app, { plan: 'pro' })
    await browser.get('/dashboard/connections')
    const page = await browser.post('/dashboard/connections', {
      host: NAME,
      port: String(PORT),
      username: provider.username,
      password: provider.password,
      from: `rebind${account.id}@example.com`,
    })
    expect(internal.connections).toBe(0)
    expect(attempts).toEqual([PUBLIC])
    expect(page.status).toBe(303)
    expect(provider.authAttempts).toBe(1)
  })

  it('a send connects to the public address it checked, never to the internal one', async () => {
    const provider = await app.sink({ port: PORT })
    const internal = await app.sink({ port: PORT })
    routes.set(PUBLIC, provider.host)
    answers = () => PUBLIC
    const { key } = await savedEarlier(provider, NAME)
    rebinding(internal)
    attempts = []
    const reply = await postSend(app, key, message)
    expect(internal.connections).toBe(0)
    expect(attempts.length).toBeGreaterThan(0)
    expect(new Set(attempts)).toEqual(new Set([PUBLIC]))
    expect(reply.status).toBe(200)
    expect(provider.messages).toHaveLength(1)
  })
})
