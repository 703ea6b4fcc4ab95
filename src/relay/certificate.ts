import { randomBytes } from 'node:crypto'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import selfsigned from 'selfsigned'
import type { Config } from '../config.ts'

/** The relay's TLS key and certificate, PEM. */
export interface RelayTls {
  key: string
  cert: string
  /** Set when the pair is the self-signed one Mailroom made: the file that keeps it. */
  selfSignedFile?: string
}

/** Where the self-signed pair is kept, key and certificate in one file so that they always match. */
export function selfSignedFile(dataDir: string): string {
  return path.join(dataDir, 'smtp-relay-tls.pem')
}

const PEM_KEY = /-----BEGIN (?:EC |RSA )?PRIVATE KEY-----[\s\S]+?-----END (?:EC |RSA )?PRIVATE KEY-----/
const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/
const TEN_YEARS_MS = 10 * 365 * 24 * 60 * 60 * 1000

/**
 * The operator's certificate (MAILROOM_SMTP_TLS_CERT and _KEY), else the self-signed one made
 * the first time and kept in the data dir, so that clients which pinned it keep trusting it.
 */
export async function relayTls(config: Pick<Config, 'relay' | 'dataDir' | 'ehloName'>): Promise<RelayTls> {
  const { tlsCertFile, tlsKeyFile } = config.relay
  if (tlsCertFile && tlsKeyFile) {
    return { cert: await readFile(tlsCertFile, 'utf8'), key: await readFile(tlsKeyFile, 'utf8') }
  }
  const file = selfSignedFile(config.dataDir)
  const kept = await readFile(file, 'utf8').catch(() => undefined)
  const pair = kept ? pemPair(kept) : undefined
  if (pair) return { ...pair, selfSignedFile: file }
  const made = await selfSigned(config.ehloName)
  await mkdir(config.dataDir, { recursive: true })
  // Written whole under another name, then renamed: two processes starting together each
  // leave a complete pair, and the one read later is whichever rename came last.
  const partial = `${file}.${randomBytes(6).toString('hex')}`
  await writeFile(partial, `${made.key}\n${made.cert}\n`, { mode: 0o600 })
  await rename(partial, file)
  return { ...made, selfSignedFile: file }
}

function pemPair(text: string): { key: string; cert: string } | undefined {
  const key = PEM_KEY.exec(text)?.[0]
  const cert = PEM_CERT.exec(text)?.[0]
  return key && cert ? { key, cert } : undefined
}

async function selfSigned(name: string): Promise<{ key: string; cert: string }> {
  const now = Date.now()
  const pems = await selfsigned.generate([{ name: 'commonName', value: name }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now - 60 * 60 * 1000),
    notAfterDate: new Date(now + TEN_YEARS_MS),
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: name }] },
    ],
  })
  return { key: pems.private, cert: pems.cert }
}
