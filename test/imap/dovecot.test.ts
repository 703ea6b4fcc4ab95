import net from 'node:net'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { imapClient, startDovecot, type TestDovecot } from '../support/dovecot.ts'

const tls = inject('tls')
let server: TestDovecot

beforeAll(async () => {
  server = await startDovecot(tls, ['reports@example.com'])
})
afterAll(() => server?.stop())

/** The server's reply to a clear-text LOGIN sent before STARTTLS. */
function clearTextLogin(host: string, port: number, user: string, pass: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port })
    let text = ''
    let sent = false
    socket.setEncoding('utf8')
    socket.on('error', reject)
    socket.on('data', (chunk) => {
      text += chunk
      if (!sent && text.includes('\r\n')) {
        sent = true
        socket.write(`a LOGIN "${user}" "${pass}"\r\n`)
      }
      if (/\r\na (OK|NO|BAD)[^\r]*\r\n/.test(text)) {
        socket.destroy()
        resolve(text)
      }
    })
  })
}

describe('the tests’ Dovecot', () => {
  it('takes a message by APPEND and serves it back over implicit TLS', async () => {
    const user = server.user
    const raw = 'From: a@example.com\r\nTo: b@example.com\r\nSubject: hello\r\n\r\nbody\r\n'
    const uid = await server.append(user, raw)
    const client = imapClient(server, user, tls)
    await client.connect()
    try {
      const lock = await client.getMailboxLock('INBOX')
      try {
        const message = await client.fetchOne(String(uid), { source: true }, { uid: true })
        expect(message ? message.source?.toString() : undefined).toContain('Subject: hello')
      } finally {
        lock.release()
      }
    } finally {
      await client.logout()
    }
  })

  it('puts a message into another folder, creating it', async () => {
    const user = server.user
    const uid = await server.append(user, 'Subject: x\r\n\r\ny\r\n', 'Reports')
    expect(uid).toBeGreaterThan(0)
  })

  it('refuses a clear-text login on port 143', async () => {
    const user = server.user
    const reply = await clearTextLogin(server.host, 143, user.username, user.password)
    expect(reply).toContain('LOGINDISABLED')
    expect(reply).toMatch(/\r\na NO /)
  })
})
