import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { captureLogs } from '../support/log-capture.ts'
import { waitFor } from '../support/queue.ts'
import { startSender } from '../support/sending.ts'
import { type Mode, refusal, relayClient, useRelay } from './relay-fixture.ts'

const logs = captureLogs()
const app = useTestApp({}, { log: logs.log })
const fixture = useRelay(app)

const QUEUED = /^250 2\.0\.0 Queued as email (\d+) <[^>]+>$/

function emailIdOf(response: string): number {
  const id = QUEUED.exec(response)?.[1]
  if (!id) throw new Error(`not a queued answer: ${response}`)
  return Number(id)
}

async function counted(metric: string, labels: Record<string, string>): Promise<number> {
  const values = (await app.services.metrics.registry.getSingleMetric(metric)?.get())?.values ?? []
  const match = values.find((v) => Object.entries(labels).every(([name, value]) => v.labels[name] === value))
  return match?.value ?? 0
}

async function emailOf(key: string, id: number): Promise<Record<string, unknown>> {
  const res = await app.request(`/emails/${id}`, { key })
  expect(res.status).toBe(200)
  return ((await res.json()) as { email: Record<string, unknown> }).email
}

describe('mail the SMTP relay accepts is queued mail', () => {
  it.each([
    ['starttls', 'PLAIN'],
    ['implicit', 'LOGIN'],
  ] as [Mode, 'PLAIN' | 'LOGIN'][])(
    'over %s with AUTH %s: answered 250 with its email ID, delivered from the connection, shown with source smtp',
    async (mode, method) => {
      await app.worker()
      const s = await startSender(app, `relay-${mode}`, { plan: 'pro' })
      const info = await relayClient(fixture.relay, s.key, { mode, method }).sendMail({
        from: s.from,
        to: ['reader@example.com'],
        subject: `Through the relay (${mode})`,
        text: 'Queued over SMTP.',
      })
      const id = emailIdOf(info.response)
      await s.sink.waitForMessages(1)
      expect(s.sink.messages[0]?.envelope).toEqual({ from: s.from, to: ['reader@example.com'] })
      expect(s.sink.messages[0]?.headers.get('subject')).toBe(`Through the relay (${mode})`)
      const email = await waitFor('the email to be sent', async () => {
        const shown = await emailOf(s.key, id)
        return shown.status === 'sent' ? shown : undefined
      })
      expect(email).toMatchObject({ id, source: 'smtp', from: s.from, to: ['reader@example.com'] })
      expect(email.message_id).toBe(/ (<[^>]+>)$/.exec(info.response)?.[1])
    },
  )

  it('sends a message with 101 recipients to the first 100, the 101st refused 452 4.5.3', async () => {
    const s = await startSender(app, 'relay-hundred', { plan: 'pro' })
    const to = Array.from({ length: 101 }, (_, i) => `r${i + 1}@example.com`)
    const info = await relayClient(fixture.relay, s.key).sendMail({
      from: s.from,
      to,
      subject: 'many',
      text: 'x',
    })
    expect(info.accepted).toHaveLength(100)
    expect(info.rejected).toEqual(['r101@example.com'])
    const [error] = (info as unknown as { rejectedErrors: { response: string }[] }).rejectedErrors
    expect(error?.response).toBe('452 4.5.3 Too many recipients: at most 100 a message')
    emailIdOf(info.response)
  })

  it('answers 451 4.3.0, never 250, when the message cannot be stored, and records nothing', async () => {
    const s = await startSender(app, 'relay-unstored', { plan: 'pro' })
    const { sql } = app.services
    // A real failure of our own database at that step, not a mock: a trigger refuses the record.
    await sql.unsafe(`
      create function refuse_relayed() returns trigger language plpgsql as $$
      begin raise exception 'storage refused'; end $$;
      create trigger refuse_relayed before insert on outbox for each row
        when (new.subject = 'unstored') execute function refuse_relayed();`)
    try {
      const client = relayClient(fixture.relay, s.key)
      const reply = await refusal(
        client.sendMail({ from: s.from, to: ['a@example.com'], subject: 'unstored', text: 'x' }),
      )
      expect(reply.response).toBe('451 4.3.0 Local error: the message was not stored; try again later')
    } finally {
      await sql.unsafe('drop trigger refuse_relayed on outbox; drop function refuse_relayed();')
    }
    const [row] = await sql<
      { n: number }[]
    >`select count(*)::int as n from outbox where account_id = ${s.accountId}`
    expect(row?.n).toBe(0)
  })

  it('refuses a bad X-Mailroom-Tags header with 554 5.6.0, naming it', async () => {
    const s = await startSender(app, 'relay-tags', { plan: 'pro' })
    const reply = await refusal(
      relayClient(fixture.relay, s.key).sendMail({
        from: s.from,
        to: ['a@example.com'],
        subject: 'tagged',
        text: 'x',
        headers: { 'X-Mailroom-Tags': 'not a tag!=1' },
      }),
    )
    expect(reply.response).toMatch(/^554 5\.6\.0 The X-Mailroom-Tags header /)
  })

  it('logs each session and message with an ID stored with the email, and never the key or the body', async () => {
    const s = await startSender(app, 'relay-logs', { plan: 'pro' })
    const body = 'A body no log line may hold: 7f3a9c'
    const sessions = await counted('mailroom_relay_sessions_total', { listener: 'smtp', refused: 'false' })
    const accepted = await counted('mailroom_relay_messages_total', { outcome: 'accepted' })
    const info = await relayClient(fixture.relay, s.key).sendMail({
      from: s.from,
      to: ['logged@example.com'],
      subject: 'logged',
      text: body,
    })
    const id = emailIdOf(info.response)
    const queued = await waitFor('the message line', () =>
      logs.lines.find((l) => l.msg === 'SMTP relay message queued' && l.emailId === id),
    )
    const [row] = await app.services.sql<
      { request_id: string }[]
    >`select request_id from outbox where id = ${id}`
    expect(queued.requestId).toBe(row?.request_id)
    const opened = logs.lines.find(
      (l) => l.msg === 'SMTP relay session opened' && l.sessionId === queued.sessionId,
    )
    expect(opened).toMatchObject({ listener: 'smtp', client: '127.0.0.1' })
    await waitFor('the session to close', () =>
      logs.lines.find((l) => l.msg === 'SMTP relay session closed' && l.sessionId === queued.sessionId),
    )
    expect(await counted('mailroom_relay_sessions_total', { listener: 'smtp', refused: 'false' })).toBe(
      sessions + 1,
    )
    expect(await counted('mailroom_relay_messages_total', { outcome: 'accepted' })).toBe(accepted + 1)
    expect(logs.text()).not.toContain(s.key)
    expect(logs.text()).not.toContain(body)
  })
})
