import { describe, expect, it } from 'vitest'
import { isPrivateAddress } from '../../src/net/public-address.ts'
import { resolveSmtpHost, SmtpHostError } from '../../src/smtp/host.ts'

const REFUSED = [
  '127.0.0.1',
  '127.8.9.10',
  '10.0.0.1',
  '172.16.5.4',
  '172.31.255.255',
  '192.168.1.1',
  '100.64.0.1',
  '100.127.255.254',
  '169.254.169.254',
  '0.0.0.0',
  '224.0.0.1',
  '255.255.255.255',
  '::',
  '::1',
  'fe80::1',
  'fc00::1',
  'fd12:3456:789a::1',
  'ff02::1',
  '::ffff:127.0.0.1',
  '::ffff:10.0.0.1',
  '::ffff:a9fe:a9fe', // 169.254.169.254, hex form
  '64:ff9b::192.168.0.1',
  // IPv6 forms that lead to private IPv4 addresses.
  '64:ff9b:1::a00:1', // local-use NAT64 (RFC 8215)
  '::ffff:0:a00:1', // SIIT (RFC 6145) to 10.0.0.1
  '::ffff:0:7f00:1', // SIIT to 127.0.0.1
  '2002:7f00:1::1', // 6to4 of 127.0.0.1
  '2002:a00:1::1', // 6to4 of 10.0.0.1
  '2002:c0a8:101::1', // 6to4 of 192.168.1.1
  '64:ff9b::a9fe:a9fe', // NAT64 of 169.254.169.254, hex form
  '::10.0.0.1', // deprecated IPv4-compatible form
  '::8.8.8.8',
  '::a00:1',
  '2001::1', // Teredo
  '2001:db8::1', // documentation
  '192.0.2.1', // TEST-NET-1
  '198.18.0.1', // benchmarking
]

const PUBLIC = [
  '93.184.216.34',
  '8.8.8.8',
  '172.32.0.1',
  '100.128.0.1',
  '2606:2800:220:1:248:1893:25c8:1946',
  // An IPv6 form of a public IPv4 address is as public as it (an IPv6-only host behind DNS64).
  '64:ff9b::808:808',
  '::ffff:8.8.8.8',
  '2002:808:808::1',
]

describe('resolveSmtpHost', () => {
  it.each(REFUSED)('refuses %s', async (address) => {
    expect(isPrivateAddress(address)).toBe(true)
    const refusal = resolveSmtpHost(address, false)
    await expect(refusal).rejects.toThrow(SmtpHostError)
    await expect(refusal).rejects.toThrow(
      `SMTP host ${address} resolves to a private address; set MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS to allow it`,
    )
  })

  it.each(PUBLIC)('accepts the public literal %s without looking anything up', async (address) => {
    expect(isPrivateAddress(address)).toBe(false)
    await expect(resolveSmtpHost(address, false)).resolves.toEqual({ address, servername: undefined })
  })

  it('accepts a bracketed IPv6 literal', async () => {
    await expect(resolveSmtpHost('[2606:2800:220:1:248:1893:25c8:1946]', false)).resolves.toEqual({
      address: '2606:2800:220:1:248:1893:25c8:1946',
      servername: undefined,
    })
  })

  it('lets private addresses through when allowed', async () => {
    await expect(resolveSmtpHost('127.0.0.1', true)).resolves.toEqual({
      address: '127.0.0.1',
      servername: undefined,
    })
    await expect(resolveSmtpHost('::1', true)).resolves.toEqual({ address: '::1', servername: undefined })
  })

  it('refuses a name that resolves to loopback and names the address', async () => {
    await expect(resolveSmtpHost('localhost', false)).rejects.toThrow(
      /^SMTP host localhost resolves to a private address \((127\.0\.0\.1|::1)\); set MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS/,
    )
  })

  it('keeps the host name for the certificate check when it resolves', async () => {
    const resolved = await resolveSmtpHost('localhost', true)
    expect(['127.0.0.1', '::1']).toContain(resolved.address)
    expect(resolved.servername).toBe('localhost')
  })

  it('says so when a host does not resolve', async () => {
    const refusal = resolveSmtpHost('no-such-host.invalid', true)
    await expect(refusal).rejects.toThrow(SmtpHostError)
    await expect(refusal).rejects.toThrow(/^SMTP host no-such-host\.invalid could not be resolved/)
  })
})
