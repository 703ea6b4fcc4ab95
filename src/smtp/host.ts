import dns from 'node:dns/promises'
import net from 'node:net'

/** The SMTP host cannot be used: it does not resolve, or it points inside the network. */
export class SmtpHostError extends Error {
  override name = 'SmtpHostError'
}

export interface ResolvedSmtpHost {
  /** The checked IP address to connect to; connecting by name would resolve again and could be steered elsewhere. */
  address: string
  /** The host name the certificate must match (and SNI); undefined when the host is an IP literal. */
  servername: string | undefined
}

const LOOKUP_TIMEOUT_MS = 10_000

const PRIVATE_V4: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network", includes the unspecified address
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
]

const PRIVATE_V6: Array<[string, number]> = [
  ['::', 96], // unspecified, loopback and the deprecated IPv4-compatible form
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // deprecated site-local, still routed inside some networks
  ['ff00::', 8], // multicast
]

const blocked = new net.BlockList()
for (const [address, prefix] of PRIVATE_V4) {
  blocked.addSubnet(address, prefix, 'ipv4')
  // Node already matches IPv4-mapped addresses against IPv4 rules, but that is not documented;
  // the NAT64 prefix reaches the same IPv4 ranges through a translator.
  blocked.addSubnet(`::ffff:${address}`, 96 + prefix, 'ipv6')
  blocked.addSubnet(`64:ff9b::${address}`, 96 + prefix, 'ipv6')
}
for (const [address, prefix] of PRIVATE_V6) blocked.addSubnet(address, prefix, 'ipv6')

export function isPrivateAddress(address: string): boolean {
  const family = net.isIP(address)
  if (family === 0) throw new SmtpHostError(`${address} is not an IP address`)
  return blocked.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

/**
 * Resolves an SMTP host once and checks every address it has, so a host with one public and one
 * private address cannot be used to reach the private one. The caller connects to `address`.
 */
export async function resolveSmtpHost(host: string, allowPrivate: boolean): Promise<ResolvedSmtpHost> {
  const name = host.trim().replace(/^\[(.*)\]$/, '$1')
  if (!name) throw new SmtpHostError('SMTP host is empty')
  const literal = net.isIP(name) !== 0
  const addresses = literal ? [name] : await lookupAll(name)
  if (!allowPrivate) {
    for (const address of addresses) {
      if (isPrivateAddress(address)) {
        const where = literal ? '' : ` (${address})`
        throw new SmtpHostError(
          `SMTP host ${name} resolves to a private address${where}; set MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS to allow it`,
        )
      }
    }
  }
  const [address] = addresses
  if (address === undefined) throw new SmtpHostError(`SMTP host ${name} could not be resolved (no addresses)`)
  // A trailing dot is valid DNS but never appears in a certificate's names.
  return { address, servername: literal ? undefined : name.replace(/\.$/, '') }
}

async function lookupAll(name: string): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new SmtpHostError(`SMTP host ${name} could not be resolved (DNS timed out)`)),
      LOOKUP_TIMEOUT_MS,
    )
  })
  try {
    const results = await Promise.race([dns.lookup(name, { all: true }), timeout])
    return results.map((r) => r.address)
  } catch (error) {
    if (error instanceof SmtpHostError) throw error
    const code = (error as NodeJS.ErrnoException).code ?? 'lookup failed'
    throw new SmtpHostError(`SMTP host ${name} could not be resolved (${code})`)
  } finally {
    clearTimeout(timer)
  }
}
