import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import selfsigned from 'selfsigned'

/**
 * The test run's TLS material: a private CA (trusted by the test workers through
 * NODE_EXTRA_CA_CERTS, see global-setup.ts) and a server certificate it signed.
 */
export interface TlsMaterial {
  /** File holding the CA certificate, the value of NODE_EXTRA_CA_CERTS. */
  caPath: string
  caPem: string
  /** Kept so tests can sign odd certificates (wrong names) that are still CA-trusted. */
  caKey: string
  /** Server key and certificate, valid for localhost, smtp.test and 127.0.0.1 to 127.0.0.254. */
  key: string
  cert: string
}

const CERT_DNS_NAMES = ['localhost', 'smtp.test']

type AltName = { type: 2; value: string } | { type: 7; ip: string }

// EC keys: RSA key generation would make every run noticeably slower for nothing.
const KEY = { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' } as const

function validity() {
  const notBeforeDate = new Date(Date.now() - 60 * 60 * 1000)
  const notAfterDate = new Date(Date.now() + 7 * 24 * 60 * 60 * 1000)
  return { notBeforeDate, notAfterDate }
}

function altNames(dnsNames: string[], ips: string[]): AltName[] {
  return [
    ...dnsNames.map((value): AltName => ({ type: 2, value })),
    ...ips.map((ip): AltName => ({ type: 7, ip })),
  ]
}

/**
 * A leaf certificate for `dnsNames`/`ips`, signed by `ca`, or self-signed when `ca` is omitted;
 * valid from an hour ago for a week unless `validFor` says otherwise (an expired one, say).
 */
export async function makeCertificate(
  names: { dnsNames?: string[]; ips?: string[] },
  ca?: { key: string; cert: string },
  validFor: { notBeforeDate: Date; notAfterDate: Date } = validity(),
): Promise<{ key: string; cert: string }> {
  const dnsNames = names.dnsNames ?? []
  const commonName = dnsNames[0] ?? names.ips?.[0] ?? 'mailroom-test'
  const pems = await selfsigned.generate([{ name: 'commonName', value: commonName }], {
    ...KEY,
    ...validFor,
    ...(ca ? { ca } : {}),
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: altNames(dnsNames, names.ips ?? []) },
    ],
  })
  return { key: pems.private, cert: pems.cert }
}

/** Every address a sink may bind: the cert must cover them all since sinks pick one at run time. */
function loopbackIps(): string[] {
  return Array.from({ length: 254 }, (_, i) => `127.0.0.${i + 1}`)
}

/** A private CA named `commonName`, valid from an hour ago for a week unless `validFor` says otherwise. */
export async function makeCa(
  commonName: string,
  validFor: { notBeforeDate: Date; notAfterDate: Date } = validity(),
): Promise<{ key: string; cert: string }> {
  const ca = await selfsigned.generate([{ name: 'commonName', value: commonName }], {
    ...KEY,
    ...validFor,
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  })
  return { key: ca.private, cert: ca.cert }
}

/** Makes the CA and server certificate and writes the CA to `dir/ca.pem`. Called once per run. */
export async function createTlsMaterial(dir: string): Promise<TlsMaterial> {
  await mkdir(dir, { recursive: true })
  const ca = await makeCa('Mailroom test CA')
  const server = await makeCertificate({ dnsNames: CERT_DNS_NAMES, ips: loopbackIps() }, ca)
  const caPath = path.join(dir, 'ca.pem')
  await writeFile(caPath, ca.cert)
  return { caPath, caPem: ca.cert, caKey: ca.key, ...server }
}
