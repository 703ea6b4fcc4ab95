import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { openImap } from '../../src/imap/login.ts'
import {
  type FolderMessage,
  type MailboxCursor,
  type MessageFate,
  readFolder,
} from '../../src/imap/reader.ts'
import { imapClient, startDovecot, type TestDovecot } from '../support/dovecot.ts'
import { folderMessages } from '../support/mailbox-reading.ts'

let server: TestDovecot
beforeAll(async () => {
  server = await startDovecot(inject('tls'))
})
afterAll(() => server?.stop())

const message = (n: number) => `Subject: report ${n}\r\n\r\nbody ${n}\r\n`

async function read(
  folder: string,
  cursor: MailboxCursor,
  options: { messages?: number; move?: boolean; maxBytes?: number } = {},
  decide: (m: FolderMessage) => Promise<MessageFate> = async () => 'left',
) {
  const client = await openImap({ host: server.host, port: 993, ...server.user }, true)
  const seen: string[] = []
  try {
    const limits = {
      messages: options.messages ?? 100,
      maxBytes: options.maxBytes ?? 1_000_000,
      move: !!options.move,
    }
    const done = await readFolder(client, folder, cursor, limits, async (m) => {
      seen.push(m.source.toString())
      return decide(m)
    })
    return { ...done, seen }
  } finally {
    await client.logout()
  }
}

const START: MailboxCursor = { uidValidity: null, lastUid: 0 }

describe('reading new messages from a folder', () => {
  it('reads what arrived since the last UID, oldest first, a bounded number at a time', async () => {
    for (const n of [1, 2, 3]) await server.append(server.user, message(n), 'Reads')
    const first = await read('Reads', START, { messages: 2 })
    expect(first.seen).toEqual([message(1), message(2)])
    const second = await read('Reads', first.cursor)
    expect(second.seen).toEqual([message(3)])
    const none = await read('Reads', second.cursor)
    expect(none.seen).toEqual([])
    expect(none.cursor).toEqual(second.cursor)
  })

  it('reads the folder anew when its UIDVALIDITY changed', async () => {
    await server.append(server.user, message(4), 'Renumbered')
    const seen = await read('Renumbered', START)
    const again = await read('Renumbered', { uidValidity: 'other', lastUid: seen.cursor.lastUid })
    expect(again.renumbered).toBe(true)
    expect(again.seen).toEqual([message(4)])
  })

  it('leaves what was left unseen in place, and marks the handled seen and moves them when asked', async () => {
    for (const n of [5, 6]) await server.append(server.user, message(n), 'Moving')
    await read('Moving', START, { move: true }, async (m) =>
      m.source.toString() === message(5) ? 'handled' : 'left',
    )
    expect(await folderMessages(server, server.user, 'Moving')).toEqual([
      { subject: 'report 6', seen: false },
    ])
    expect(await folderMessages(server, server.user, ['Mailroom', 'Processed'])).toContainEqual({
      subject: 'report 5',
      seen: true,
    })
  })

  it('marks handled messages seen and leaves them in place when moving is off', async () => {
    await server.append(server.user, message(7), 'Staying')
    const done = await read('Staying', START, { move: false }, async () => 'handled')
    expect(done.handled).toBe(1)
    expect(await folderMessages(server, server.user, 'Staying')).toEqual([
      { subject: 'report 7', seen: true },
    ])
  })

  it('stops at a message it could not decide, keeping what it decided before', async () => {
    for (const n of [8, 9, 10]) await server.append(server.user, message(n), 'Failing')
    const done = await read('Failing', START, {}, async (m) => {
      if (m.source.toString() === message(9)) throw new Error('the database went away')
      return 'handled'
    })
    expect(done.failure).toBeInstanceOf(Error)
    expect(done.handled).toBe(1)
    const next = await read('Failing', done.cursor)
    expect(next.seen).toEqual([message(9), message(10)])
  })

  it('fetches at most maxBytes of each message', async () => {
    await server.append(server.user, `Subject: big\r\n\r\n${'x'.repeat(5000)}\r\n`, 'Big')
    const done = await read('Big', START, { maxBytes: 1000 })
    expect(done.seen[0]?.length).toBe(1000)
  })

  it('reads a folder from its start only as far back as asked', async () => {
    const client = imapClient(server, server.user, inject('tls'))
    await client.connect()
    try {
      await client.mailboxCreate('Old')
      await client.append('Old', message(11), [], new Date(Date.now() - 200 * 86_400_000))
      await client.append('Old', message(12))
    } finally {
      await client.logout()
    }
    const since = new Date(Date.now() - 90 * 86_400_000)
    const client2 = await openImap({ host: server.host, port: 993, ...server.user }, true)
    const seen: string[] = []
    try {
      const limits = { messages: 100, maxBytes: 1_000_000, move: false, since }
      await readFolder(client2, 'Old', START, limits, async (m) => {
        seen.push(m.source.toString())
        return 'left'
      })
    } finally {
      await client2.logout()
    }
    expect(seen).toEqual([message(12)])
  })
})
