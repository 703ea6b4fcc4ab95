/**
 * A received message taken apart as a mail reader would: its parts, nested by their boundaries,
 * each with its headers (unfolded, names in lower case) and its body decoded by its
 * Content-Transfer-Encoding; and RFC 2047 encoded words read back.
 */

export interface MimePart {
  headers: Map<string, string>
  /** The media type alone, in lower case (`multipart/mixed`). */
  type: string
  /** The body's bytes, decoded (base64 or quoted-printable); empty for a multipart. */
  content: Buffer
  parts: MimePart[]
}

export function parseMime(raw: string): MimePart {
  const end = raw.search(/\r\n\r\n/)
  const block = end === -1 ? raw : raw.slice(0, end)
  const body = end === -1 ? '' : raw.slice(end + 4)
  const headers = new Map<string, string>()
  for (const line of block.replace(/\r\n[ \t]+/g, ' ').split('\r\n')) {
    const colon = line.indexOf(':')
    const name = line.slice(0, colon).toLowerCase()
    if (!headers.has(name)) headers.set(name, line.slice(colon + 1).trim())
  }
  const contentType = headers.get('content-type') ?? 'text/plain'
  const type = (contentType.split(';')[0] ?? '').trim().toLowerCase()
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1]
  if (!type.startsWith('multipart/') || boundary === undefined) {
    return { headers, type, content: decodedBody(body, headers.get('content-transfer-encoding')), parts: [] }
  }
  const sections = body.split(`--${boundary}`).slice(1)
  const parts = sections
    .filter((section) => !section.startsWith('--'))
    .map((section) => parseMime(section.replace(/^\r\n/, '').replace(/\r\n$/, '')))
  return { headers, type, content: Buffer.alloc(0), parts }
}

function decodedBody(body: string, encoding: string | undefined): Buffer {
  switch (encoding?.toLowerCase()) {
    case 'base64':
      return Buffer.from(body.replace(/\s+/g, ''), 'base64')
    case 'quoted-printable':
      return Buffer.from(
        body
          .replace(/=\r\n/g, '')
          .replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
        'latin1',
      )
    default:
      return Buffer.from(body)
  }
}

/** Every leaf part of `part`, depth first. */
export function leaves(part: MimePart): MimePart[] {
  return part.parts.length === 0 ? [part] : part.parts.flatMap(leaves)
}

/** A header value with its RFC 2047 encoded words (UTF-8, B or Q) decoded. */
export function decodeWords(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?utf-8\?([BQ])\?([^?]*)\?=/gi, (_, kind: string, text: string) =>
      kind.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64').toString('utf8')
        : Buffer.from(
            text
              .replace(/_/g, ' ')
              .replace(/=([0-9A-F]{2})/gi, (__, hex: string) =>
                String.fromCharCode(Number.parseInt(hex, 16)),
              ),
            'latin1',
          ).toString('utf8'),
    )
}
