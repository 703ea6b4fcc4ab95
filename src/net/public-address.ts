import dns from 'node:dns/promises'
import net from 'node:net'
import ipaddr from 'ipaddr.js'

/** A host that cannot be used: it does not resolve, or it points inside the network. */
export class HostAddressError extends Error {
  override name = 'HostAddressError'
}

export interface ResolvedHost {
  /** The checked IP address to connect to; connecting by name would resolve again and could be steered elsewhere. */
  address: string
  /** The host name the certificate must match (and SNI); undefined when the host is an IP literal. */
  servername: string | undefined
}

const LOOKUP_TIMEOUT_MS = 10_000

/**
 * IPv6 ranges of ipaddr.js's table that carry an IPv4 address, and where (first byte of the four):
 * such an address reaches that IPv4 address through a translator or tunnel, so it is judged as
 * that address. The local-use NAT64 prefix (64:ff9b:1::/48) is not here: where inside it the IPv4
 * address sits is the local network's choice, and it is local by definition.
 */
const EMBEDDED_V4_AT: Record<string, number> = { ipv4Mapped: 12, rfc6145: 12, '6to4': 2 }
const WELL_KNOWN_NAT64 = ipaddr.parseCIDR('64:ff9b::/96')
/**
 * The deprecated IPv4-compatible form (::a.b.c.d): ipaddr.js files its hex spelling under
 * unicast and reads its dotted one as IPv4-mapped, so it is refused by its text and its range.
 */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96')
const DOTTED_IPV4_COMPATIBLE = /^::(?!ffff:)[^:]*\./i

/**
 * Whether an address lies outside the public internet, by ipaddr.js's table of special ranges
 * (loopback, private, link-local, unique-local, carrier-grade NAT, multicast, reserved, Teredo,
 * ...): only plain unicast is public, and an IPv6 address that embeds an IPv4 one is as public as
 * the IPv4 address it leads to.
 */
export function isPrivateAddress(address: string): boolean {
  if (!ipaddr.isValid(address) || net.isIP(address) === 0)
    throw new HostAddressError(`${address} is not an IP address`)
  const parsed = ipaddr.parse(address)
  if (parsed.kind() === 'ipv4') return parsed.range() !== 'unicast'
  const v6 = parsed as ipaddr.IPv6
  if (DOTTED_IPV4_COMPATIBLE.test(address) || v6.match(IPV4_COMPATIBLE)) return true
  const embedded = embeddedIpv4(v6)
  if (embedded) return isPrivateAddress(embedded.toString())
  return v6.range() !== 'unicast'
}

function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const bytes = address.toByteArray()
  const at = address.match(WELL_KNOWN_NAT64) ? 12 : EMBEDDED_V4_AT[address.range()]
  return at === undefined ? undefined : new ipaddr.IPv4(bytes.slice(at, at + 4))
}

/** What a refusal calls the host, and the setting that allows private addresses. */
export interface HostUse {
  /** e.g. `SMTP host`, `Webhook URL host`. */
  label: string
  setting: string
}

/**
 * Resolves a host once and checks every address it has, so a host with one public and one
 * private address cannot be used to reach the private one. The caller connects to `address`.
 */
export async function resolvePublicHost(
  host: string,
  allowPrivate: boolean,
  use: HostUse,
): Promise<ResolvedHost> {
  const name = host.trim().replace(/^\[(.*)\]$/, '$1')
  if (!name) throw new HostAddressError(`${use.label} is empty`)
  const literal = net.isIP(name) !== 0
  const addresses = literal ? [name] : await lookupAll(name, use.label)
  if (!allowPrivate) {
    for (const address of addresses) {
      if (isPrivateAddress(address)) {
        const where = literal ? '' : ` (${address})`
        throw new HostAddressError(
          `${use.label} ${name} resolves to a private address${where}; set ${use.setting} to allow it`,
        )
      }
    }
  }
  const [address] = addresses
  if (address === undefined)
    throw new HostAddressError(`${use.label} ${name} could not be resolved (no addresses)`)
  // A trailing dot is valid DNS but never appears in a certificate's names.
  return { address, servername: literal ? undefined : name.replace(/\.$/, '') }
}

async function lookupAll(name: string, label: string): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new HostAddressError(`${label} ${name} could not be resolved (DNS timed out)`)),
      LOOKUP_TIMEOUT_MS,
    )
  })
  try {
    const results = await Promise.race([dns.lookup(name, { all: true }), timeout])
    return results.map((r) => r.address)
  } catch (error) {
    if (error instanceof HostAddressError) throw error
    const code = (error as NodeJS.ErrnoException).code ?? 'lookup failed'
    throw new HostAddressError(`${label} ${name} could not be resolved (${code})`)
  } finally {
    clearTimeout(timer)
  }
}
