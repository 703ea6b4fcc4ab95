/**
 * The worker reads each connection's mailbox: a bounce and a complaint report put into it become
 * the email's history and its recipients' statuses, suppressions, webhook events with the email's
 * tags, and metrics; the reports are marked seen and moved to Mailroom/Processed.
 */

import type { WebhookEvent } from '@mailroom/sdk'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { scheduleMailboxReads } from '../../src/db/jobs.ts'
import { useTestApp } from '../support/app.ts'
import { arfReport, dsnReport } from '../support/bounce-reports.ts'
import { startDovecot, type TestDovecot } from '../support/dovecot.ts'
import {
  counted,
  folderMessages,
  type MailboxSender,
  senderWithMailbox,
  sentEmail,
} from '../support/mailbox-reading.ts'
import { waitFor } from '../support/queue.ts'
import { useWebhookReceivers, verified } from '../support/webhook-receiver.ts'

const app = useTestApp()
const startReceiver = useWebhookReceivers()
let server: TestDovecot
const GONE = '550 5.1.1 <gone@example.com>: Recipient address rejected: User unknown'
const tags = [{ name: 'campaign', value: 'welcome' }]
let s: MailboxSender
let email: { id: number; messageId: string }
let events: WebhookEvent[]

/** A bounce and a complaint for one email put in the mailbox, and the worker's reading of it. */
beforeAll(async () => {
  server = await startDovecot(inject('tls'), ['bounces@example.com'])
  s = await senderWithMailbox(app, server, server.user)
  const receiver = await startReceiver()
  const created = await app.request('/webhooks', {
    method: 'POST',
    key: s.key,
    body: { url: receiver.url, events: ['email.bounced', 'email.complained'] },
  })
  const { secret } = (await created.json()) as { secret: string }
  email = await sentEmail(app, s, { to: ['Gone@Example.com', 'angry@example.com'], tags })
  const bounce = dsnReport({
    messageId: email.messageId,
    recipients: [{ email: 'gone@example.com', status: '5.1.1', diagnostic: GONE }],
  })
  await server.append(s.mailbox, bounce)
  await server.append(s.mailbox, arfReport({ messageId: email.messageId, recipient: 'angry@example.com' }))
  await app.worker()
  await scheduleMailboxReads(app.services.sql)
  events = await waitFor(
    () => `two webhook events (got ${receiver.received.length})`,
    async () => {
      const all = await Promise.all(receiver.received.map((r) => verified(r, secret)))
      return all.length >= 2 ? all : undefined
    },
    30_000,
  )
}, 90_000)
afterAll(async () => {
  await app.stopWorkers()
  await server?.stop()
})

async function suppression(address: string) {
  const res = await app.request(`/suppressions/${encodeURIComponent(address)}`, { key: s.key })
  return ((await res.json()) as { suppression: Record<string, unknown> }).suppression
}

describe('reports read by the worker from a connection mailbox', () => {
  it("become the email's history and its recipients' statuses", async () => {
    const res = await app.request(`/emails/${email.id}`, { key: s.key })
    const shown = ((await res.json()) as { email: Record<string, unknown> }).email
    const history = shown.history as { type: string }[]
    expect(history.filter((e) => e.type === 'bounced' || e.type === 'complained')).toEqual([
      {
        type: 'bounced',
        at: expect.any(String),
        recipient: 'gone@example.com',
        status: '5.1.1',
        diagnostic: GONE,
        suppressed: true,
      },
      {
        type: 'complained',
        at: expect.any(String),
        recipient: 'angry@example.com',
        status: null,
        diagnostic: 'abuse',
        suppressed: true,
      },
    ])
    expect(shown.recipients).toEqual([
      { email: 'Gone@Example.com', status: 'bounced', reply: GONE },
      { email: 'angry@example.com', status: 'complained', reply: 'abuse' },
    ])
  })

  it('suppress the hard bounce and the complaint, from the email', async () => {
    const source = { type: 'email', id: email.id }
    expect(await suppression('gone@example.com')).toMatchObject({
      reason: 'hard_bounce',
      scope: 'all',
      detail: GONE,
      source,
    })
    expect(await suppression('angry@example.com')).toMatchObject({
      reason: 'complaint',
      scope: 'all',
      detail: 'abuse',
      source,
    })
  })

  it("are sent as email.bounced and email.complained with the email's tags", () => {
    const byType = new Map(events.map((e) => [e.type, e.data as Record<string, unknown>]))
    expect(byType.get('email.bounced')).toMatchObject({
      outbox_id: email.id,
      message_id: email.messageId,
      tags,
      report: { recipient: 'gone@example.com', status: '5.1.1', diagnostic: GONE, suppressed: true },
    })
    expect(byType.get('email.complained')).toMatchObject({
      outbox_id: email.id,
      tags,
      report: { recipient: 'angry@example.com', status: null, diagnostic: 'abuse', suppressed: true },
    })
  })

  it('are counted: a hard bounce, a complaint, two messages handled', async () => {
    const connection = String(s.connectionId)
    expect(await counted(app, 'mailroom_bounces_total', { kind: 'hard', connection })).toBe(1)
    expect(await counted(app, 'mailroom_complaints_total', { connection })).toBe(1)
    expect(await counted(app, 'mailroom_mailbox_messages_total', { outcome: 'handled', connection })).toBe(2)
  })

  it('are marked seen and moved to Mailroom/Processed', async () => {
    expect(await folderMessages(server, s.mailbox)).toEqual([])
    const processed = await folderMessages(server, s.mailbox, ['Mailroom', 'Processed'])
    expect(processed).toHaveLength(2)
    expect(processed.every((m) => m.seen)).toBe(true)
  })
})
