/**
 * The SDK takes an attachment's content as base64 text or as bytes (Uint8Array, Buffer), encodes
 * bytes itself, and the SMTP server receives the very bytes either way.
 */
import { randomBytes } from 'node:crypto'
import { createClient } from '@mailroom/sdk'
import { describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from './support/app.ts'
import { leaves, parseMime } from './support/mime.ts'

// The SDK talks HTTP: a listening server.
const app = useTestApp({}, { listen: true })

describe('attachments through the SDK', () => {
  it('sends base64 text, a Uint8Array and a Buffer as the same bytes', async () => {
    const sink = await app.sink({ port: 465 })
    const owner = await seedAccount(app, { connection: { ...sink.login, from: 'sdk-files@example.com' } })
    const mailroom = createClient({ baseUrl: app.baseUrl, apiKey: owner.key })
    const bytes = randomBytes(70_000)
    const view = new Uint8Array(bytes.buffer, bytes.byteOffset + 1, bytes.length - 2)
    await mailroom.send({
      to: 'ada@example.com',
      subject: 'Files',
      text_body: 'Attached',
      reply_to: 'desk@example.com',
      attachments: [
        { filename: 'text.bin', content: bytes.toString('base64') },
        { filename: 'view.bin', content: view },
        { filename: 'buffer.bin', content: bytes },
      ],
    })
    const [message] = sink.messages
    expect(message?.headers.get('reply-to')).toBe('desk@example.com')
    const files = leaves(parseMime(message?.raw ?? '')).filter((part) =>
      part.headers.has('content-disposition'),
    )
    expect(files.map((part) => part.content)).toEqual([bytes, Buffer.from(view), bytes])
  })
})
