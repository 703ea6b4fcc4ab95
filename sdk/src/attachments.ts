/**
 * An attachment's `content` is base64 on the wire; the SDK also takes the bytes themselves
 * (`Uint8Array`, `Buffer`) and encodes them here, before the body is sent.
 */

/** Slices of this many bytes go through String.fromCharCode at once (its arguments are bounded). */
const SLICE = 0x8000

/** `body` with every attachment given as bytes encoded in base64; anything else as it is. */
export function withEncodedAttachments(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || !('attachments' in body)) return body
  const { attachments } = body as { attachments: unknown }
  if (!Array.isArray(attachments) || !attachments.some(givenAsBytes)) return body
  return {
    ...body,
    attachments: attachments.map((attachment) =>
      givenAsBytes(attachment) ? { ...attachment, content: base64Of(attachment.content) } : attachment,
    ),
  }
}

function givenAsBytes(attachment: unknown): attachment is { content: Uint8Array } {
  return (
    typeof attachment === 'object' &&
    attachment !== null &&
    (attachment as { content?: unknown }).content instanceof Uint8Array
  )
}

function base64Of(bytes: Uint8Array): string {
  let binary = ''
  for (let at = 0; at < bytes.length; at += SLICE) {
    binary += String.fromCharCode(...bytes.subarray(at, at + SLICE))
  }
  return btoa(binary)
}
