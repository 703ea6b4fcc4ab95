import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'

/** A sealed SMTP password that cannot be opened: wrong MAILROOM_SECRET or a damaged value. */
export class SecretBoxError extends Error {
  override name = 'SecretBoxError'
}

const VERSION = 'v1'
const INFO = 'mailroom smtp password'
const IV_BYTES = 12
const TAG_BYTES = 16

// MAILROOM_SECRET is already high-entropy key material, so HKDF needs no salt to be sound; the
// info string keeps this key apart from anything else ever derived from the same secret.
function deriveKey(secret: string): Buffer {
  if (!secret) throw new SecretBoxError('MAILROOM_SECRET is empty; it is needed to encrypt SMTP passwords')
  return Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), INFO, 32))
}

/** Encrypts an SMTP password for storage: `v1.<iv>.<tag>.<ciphertext>`, each part base64url. */
export function sealPassword(secret: string, plaintext: string): string {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', deriveKey(secret), iv, { authTagLength: TAG_BYTES })
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  const tag = cipher.getAuthTag()
  return [
    VERSION,
    iv.toString('base64url'),
    tag.toString('base64url'),
    ciphertext.toString('base64url'),
  ].join('.')
}

/** Decrypts a value made by `sealPassword`; throws `SecretBoxError` if it cannot be authenticated. */
export function openPassword(secret: string, sealed: string): string {
  const parts = sealed.split('.')
  if (parts.length !== 4 || parts[0] !== VERSION) {
    throw new SecretBoxError(
      'stored SMTP password has an unknown format (expected v1.<iv>.<tag>.<ciphertext>)',
    )
  }
  const iv = Buffer.from(parts[1] ?? '', 'base64url')
  const tag = Buffer.from(parts[2] ?? '', 'base64url')
  const ciphertext = Buffer.from(parts[3] ?? '', 'base64url')
  // GCM would accept a truncated tag, which makes forgeries cheaper: insist on the full length.
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
    throw new SecretBoxError('stored SMTP password is damaged (bad IV or tag length)')
  }
  const decipher = createDecipheriv('aes-256-gcm', deriveKey(secret), iv, { authTagLength: TAG_BYTES })
  decipher.setAuthTag(tag)
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8')
  } catch {
    throw new SecretBoxError(
      'stored SMTP password cannot be decrypted: MAILROOM_SECRET is not the one it was encrypted with, or the value is damaged',
    )
  }
}
