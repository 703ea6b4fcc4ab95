import { describe, expect, it } from 'vitest'
import { openPassword, SecretBoxError, sealPassword } from '../../src/smtp/secret-box.ts'

const SECRET = 'a-test-secret-that-is-at-least-32-characters'

describe('secret box', () => {
  it('round-trips a password, including non-ASCII text', () => {
    for (const password of ['hunter2', '', 'pässwörd 🔑 with spaces']) {
      expect(openPassword(SECRET, sealPassword(SECRET, password))).toBe(password)
    }
  })

  it('stores v1.<iv>.<tag>.<ciphertext> in base64url with a 12-byte IV and 16-byte tag', () => {
    const sealed = sealPassword(SECRET, 'hunter2')
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/)
    const [, iv, tag, ciphertext] = sealed.split('.')
    expect(Buffer.from(iv ?? '', 'base64url')).toHaveLength(12)
    expect(Buffer.from(tag ?? '', 'base64url')).toHaveLength(16)
    expect(Buffer.from(ciphertext ?? '', 'base64url')).toHaveLength('hunter2'.length)
    expect(sealed).not.toContain('hunter2')
  })

  it('uses a fresh IV on every seal', () => {
    const a = sealPassword(SECRET, 'same')
    const b = sealPassword(SECRET, 'same')
    expect(a).not.toBe(b)
    expect(a.split('.')[1]).not.toBe(b.split('.')[1])
  })

  it('refuses to open with another secret, with a message that says why', () => {
    const sealed = sealPassword(SECRET, 'hunter2')
    expect(() => openPassword(`${SECRET}-other`, sealed)).toThrow(SecretBoxError)
    expect(() => openPassword(`${SECRET}-other`, sealed)).toThrow(/MAILROOM_SECRET/)
  })

  it('refuses tampered, truncated or unknown values', () => {
    const sealed = sealPassword(SECRET, 'hunter2')
    const [v, iv, tag, ciphertext] = sealed.split('.') as [string, string, string, string]
    const flipped = Buffer.from(ciphertext, 'base64url')
    flipped[0] = (flipped[0] ?? 0) ^ 1
    expect(() => openPassword(SECRET, [v, iv, tag, flipped.toString('base64url')].join('.'))).toThrow(
      SecretBoxError,
    )
    const shortTag = Buffer.from(tag, 'base64url').subarray(0, 4).toString('base64url')
    expect(() => openPassword(SECRET, [v, iv, shortTag, ciphertext].join('.'))).toThrow(/damaged/)
    expect(() => openPassword(SECRET, `v2.${iv}.${tag}.${ciphertext}`)).toThrow(/unknown format/)
    expect(() => openPassword(SECRET, 'hunter2')).toThrow(/unknown format/)
  })
})
