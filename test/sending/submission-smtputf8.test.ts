/**
 * A submitted message that needs SMTPUTF8 (the client asked for it, or an envelope address is
 * not ASCII) goes unchanged to a provider that offers SMTPUTF8, and never to one that does not:
 * it ends failed, with that reason.
 */
import { describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from '../support/app.ts'
import { useDelivery } from '../support/delivery.ts'
import { waitForOutboxStatus } from '../support/queue.ts'
import { senderAddress } from '../support/sending.ts'
import type { ReceivedMessage } from '../support/smtp-sink.ts'
import { crlf, submitted } from '../support/submissions.ts'

const app = useTestApp()
useDelivery(app)

/** A Pro account whose one connection goes to a sink that offers SMTPUTF8 or not. */
async function senderTo(offersSmtpUtf8: boolean) {
  const sink = await app.sink({ port: 2525, hideSmtpUtf8: !offersSmtpUtf8 })
  const from = senderAddress('utf8')
  const seeded = await seedAccount(app, { plan: 'pro', connection: { ...sink.login, from, rate: 6000 } })
  return { sink, from, key: seeded.key, accountId: seeded.account.id }
}

const UTF8_MESSAGE = crlf(
  'From: Jürgen <jurgen@example.com>',
  'To: Zoë <zoe@example.com>',
  'Subject: Grüße',
  '',
  'Tschüß',
  '',
)

describe('a message that needs SMTPUTF8', () => {
  it('goes unchanged to a server that offers SMTPUTF8', async () => {
    const s = await senderTo(true)
    const accepted = await submitted(app, s, UTF8_MESSAGE, {
      recipients: ['zoe@example.com'],
      smtpUtf8: true,
    })
    const [received] = (await s.sink.waitForMessages(1, 5_000)) as [ReceivedMessage]
    expect(
      received.raw.startsWith(crlf('From: Jürgen <jurgen@example.com>', 'To: Zoë <zoe@example.com>')),
    ).toBe(true)
    expect(received.raw.endsWith(crlf('', 'Tschüß', ''))).toBe(true)
    const sent = await waitForOutboxStatus(app, s.accountId, accepted.outboxId, 'sent')
    expect(sent.subject).toBe('Grüße')
  })

  it('to a server without SMTPUTF8 is never sent, and ends failed with that reason, suppressing no one', async () => {
    const s = await senderTo(false)
    const accepted = await submitted(app, s, UTF8_MESSAGE, {
      recipients: ['zoe@example.com'],
      smtpUtf8: true,
    })
    const failed = await waitForOutboxStatus(app, s.accountId, accepted.outboxId, 'failed')
    expect(failed.error).toMatch(/does not offer SMTPUTF8/)
    expect(failed.recipients).toEqual([
      { address: 'zoe@example.com', status: 'refused', reply: failed.error },
    ])
    expect(s.sink.messages).toHaveLength(0)
    expect(s.sink.declaredSizes).toHaveLength(0)
    // The provider's limit says nothing of the recipient's mailbox: no suppression.
    const [row] = await app.services.sql<{ n: number }[]>`
      select count(*)::int as n from suppressions where account_id = ${s.accountId}`
    expect(row?.n).toBe(0)
  })

  it('is told by an envelope address that is not ASCII, without the client asking', async () => {
    const s = await senderTo(false)
    const accepted = await submitted(app, s, UTF8_MESSAGE, { recipients: ['zoë@example.com'] })
    const failed = await waitForOutboxStatus(app, s.accountId, accepted.outboxId, 'failed')
    expect(failed.error).toMatch(/does not offer SMTPUTF8/)
    expect(s.sink.declaredSizes).toHaveLength(0)
  })

  it('leaves the connection usable: a message that needs no SMTPUTF8 goes to the same server after one was refused', async () => {
    const s = await senderTo(false)
    const refused = await submitted(app, s, UTF8_MESSAGE, { recipients: ['zoe@example.com'], smtpUtf8: true })
    await waitForOutboxStatus(app, s.accountId, refused.outboxId, 'failed')
    const plain = crlf('To: ada@example.com', 'Subject: Plain', '', 'Hello', '')
    const accepted = await submitted(app, s, plain, { recipients: ['ada@example.com'] })
    await waitForOutboxStatus(app, s.accountId, accepted.outboxId, 'sent')
    expect(s.sink.messages).toHaveLength(1)
  })
})
