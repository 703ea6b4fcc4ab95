import net from 'node:net'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { ImapLoginError, type ImapPort, verifyImapLogin } from '../../src/imap/login.ts'
import { startDovecot, type TestDovecot } from '../support/dovecot.ts'
import { candidateHosts } from '../support/smtp-sink.ts'

let server: TestDovecot

beforeAll(async () => {
  server = await startDovecot(inject('tls'))
})
afterAll(() => server?.stop())

function verify(
  port: ImapPort,
  options: { password?: string; folder?: string; allowPrivate?: boolean } = {},
) {
  const login = {
    host: server.host,
    port,
    username: server.user.username,
    password: options.password ?? server.user.password,
  }
  return verifyImapLogin(login, options.folder ?? 'INBOX', options.allowPrivate ?? true)
}

describe('testing a mailbox login', () => {
  it.each([993, 143] as const)('logs in on port %s and opens the folder', async (port) => {
    await expect(verify(port)).resolves.toBeUndefined()
  })

  it("refuses a wrong password with the server's reason, and never repeats the password", async () => {
    const error = await verify(993, { password: 'not-the-password' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ImapLoginError)
    expect((error as Error).message).toMatch(
      /refused the login: .*AUTHENTICATIONFAILED|Authentication failed/,
    )
    expect((error as Error).message).not.toContain('not-the-password')
  })

  it('refuses a folder the mailbox does not have', async () => {
    await expect(verify(143, { folder: 'Nowhere' })).rejects.toThrow(/"Nowhere" cannot be opened/)
  })

  it('refuses a private host unless private hosts are allowed', async () => {
    await expect(verify(993, { allowPrivate: false })).rejects.toThrow(/MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS/)
  })

  it('refuses a server on 143 that does not offer STARTTLS, never logging in in clear text', async () => {
    const heard: string[] = []
    const plain = net.createServer((socket) => {
      socket.write('* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] ready\r\n')
      socket.on('data', (chunk) => {
        for (const line of chunk.toString().split('\r\n').filter(Boolean)) {
          heard.push(line)
          const tag = line.split(' ')[0]
          if (/ CAPABILITY$/i.test(line))
            socket.write(`* CAPABILITY IMAP4rev1 AUTH=PLAIN\r\n${tag} OK done\r\n`)
          else socket.write(`${tag} OK done\r\n`)
        }
      })
    })
    const host = await listenOn143(plain)
    try {
      const login = { host, port: 143 as const, username: 'u@example.com', password: 'clear-text-password' }
      await expect(verifyImapLogin(login, 'INBOX', true)).rejects.toThrow(ImapLoginError)
      expect(heard.join('\n')).not.toContain('clear-text-password')
      expect(heard.join('\n')).not.toMatch(/LOGIN|AUTHENTICATE/i)
    } finally {
      await new Promise((resolve) => plain.close(resolve))
    }
  })
})

async function listenOn143(server: net.Server): Promise<string> {
  for (const host of candidateHosts()) {
    const listening = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false))
      server.listen(143, host, () => resolve(true))
    })
    if (listening) return host
  }
  throw new Error('no loopback address has port 143 free')
}
