import { createHmac, timingSafeEqual } from 'node:crypto'
import type { MemberLinkSigning } from '../db/audiences.ts'
import { isStorableId } from '../db/ids.ts'
import type { Db } from '../db/sql.ts'
import { unsubscribeMemberRow } from '../db/suppressions.ts'
import { suppressionStrength } from '../suppressions/strength.ts'

/**
 * One-click unsubscribe from audience mail (RFC 8058): each member's link is signed with a key
 * derived from MAILROOM_SECRET, so it names the audience and member and cannot be forged or
 * guessed; nothing is stored per link.
 */

/** What signing links needs: the service's secret and public address. */
export interface UnsubscribeLinks {
  secret: string
  publicUrl: string
}

/** A member of an audience, as a link names them. */
export interface MemberRef {
  audienceId: number
  memberId: number
}

function signingKey(secret: string): Buffer {
  return createHmac('sha256', secret).update('mailroom unsubscribe link v1').digest()
}

function signature(secret: string, ref: MemberRef): Buffer {
  return createHmac('sha256', signingKey(secret)).update(`${ref.audienceId}.${ref.memberId}`).digest()
}

/** HMAC-SHA256's block size: the key is padded to it. */
const BLOCK = 64

/**
 * How PostgreSQL signs the links of an audience's members while it expands them into a batch
 * (they never come into the process): HMAC-SHA256 is two plain SHA-256, built into PostgreSQL,
 * over the key's pads. The tokens are byte for byte those of `unsubscribeToken`.
 */
export function memberLinkSigning(links: UnsubscribeLinks, audienceId: number): MemberLinkSigning {
  const key = Buffer.alloc(BLOCK)
  signingKey(links.secret).copy(key)
  return {
    audienceId,
    prefix: `${links.publicUrl}/unsubscribe/${audienceId}.`,
    innerPad: Buffer.from(key.map((byte) => byte ^ 0x36)),
    outerPad: Buffer.from(key.map((byte) => byte ^ 0x5c)),
  }
}

/** The member's unsubscribe token: `<audience>.<member>.<signature>`. */
export function unsubscribeToken(secret: string, ref: MemberRef): string {
  return `${ref.audienceId}.${ref.memberId}.${signature(secret, ref).toString('base64url')}`
}

export function unsubscribeUrl(links: UnsubscribeLinks, ref: MemberRef): string {
  return `${links.publicUrl}/unsubscribe/${unsubscribeToken(links.secret, ref)}`
}

/** The member a token names, when its signature is right; undefined otherwise. */
export function verifyUnsubscribeToken(secret: string, token: string): MemberRef | undefined {
  const match = /^([0-9]{1,10})\.([0-9]{1,10})\.([A-Za-z0-9_-]{43})$/.exec(token)
  if (!match) return undefined
  const ref = { audienceId: Number(match[1]), memberId: Number(match[2]) }
  if (!isStorableId(ref.audienceId) || !isStorableId(ref.memberId)) return undefined
  const sent = Buffer.from(match[3] as string, 'base64url')
  const wanted = signature(secret, ref)
  return sent.length === wanted.length && timingSafeEqual(sent, wanted) ? ref : undefined
}

/**
 * Removes the member a valid token names and suppresses its address for marketing (reason
 * `unsubscribe`), so that no batch reaches it again, through this audience or another. Harmless
 * when repeated (the member is simply gone); returns false only for a token that is not valid.
 */
export async function unsubscribe(db: Db, secret: string, token: string): Promise<boolean> {
  const ref = verifyUnsubscribeToken(secret, token)
  if (!ref) return false
  await unsubscribeMemberRow(db, ref, suppressionStrength({ reason: 'unsubscribe', scope: 'marketing' }))
  return true
}

/**
 * The headers an audience batch's message carries (RFC 2369 and RFC 8058), or none for any
 * other mail. The link is signed when the batch is made and kept with the message.
 */
export function listUnsubscribeHeaders(url: string | null): Record<string, string> | undefined {
  if (url === null) return undefined
  return { 'List-Unsubscribe': `<${url}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' }
}
