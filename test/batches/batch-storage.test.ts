/**
 * A batch stores its content once and copies its audience inside PostgreSQL, then moves it into
 * the outbox in chunks (docs/decisions.md, "Limits on every request"). Each message is rendered
 * when it is sent, and the outbox shows exactly what was sent. Both tests fail on the old path, which rendered every recipient's copy
 * in the process and queued them as one JSON parameter: past 512 MiB of text, postgres.js fails
 * with `RangeError: Invalid string length` and the batch answers 500.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_EXPANSION } from '../../src/batches/expansion.ts'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import { listOutbox, outboxRecord } from '../../src/sending/outbox-views.ts'
import { useTestApp } from '../support/app.ts'
import {
  addresses,
  answerOf,
  audienceWith,
  batchOf,
  decodeMessage,
  poll,
  postBatch,
} from '../support/batches.ts'
import { type Sender, startSender } from '../support/sending.ts'

const app = useTestApp()

beforeAll(async () => {
  await app.worker({ retry: retryPolicy(50, 3, 50) })
})

/** Waits until every recipient of the batch is in the outbox. */
function movedOut(batchId: number): Promise<true> {
  return poll(
    `batch ${batchId} moved into the outbox`,
    async () => {
      const [row] = await app.services.sql<{ stored: number }[]>`
      select count(*)::int as stored from batch_recipients where batch_id = ${batchId}`
      return row?.stored === 0 ? true : undefined
    },
    60_000,
  )
}

/** What the batch's records and the account's batch contents hold, in bytes. */
async function storedBytes(batchId: number, accountId: number) {
  const [records] = await app.services.sql<{ count: number; own_content: number; record_bytes: number }[]>`
    select count(*)::int as count,
      coalesce(sum(octet_length(coalesce(subject, '')) + octet_length(coalesce(text_body, ''))
                   + octet_length(coalesce(html_body, ''))), 0)::int as own_content,
      coalesce(sum(pg_column_size(o.*)), 0)::int as record_bytes
    from outbox o where batch_id = ${batchId}`
  const [contents] = await app.services.sql<{ count: number; body_bytes: number }[]>`
    select count(*)::int as count, coalesce(sum(octet_length(html_body) + octet_length(coalesce(text_body, ''))), 0)::int as body_bytes
    from batch_contents where account_id = ${accountId}`
  return { records, contents }
}

describe('a large template in a 1000-recipient batch', () => {
  it('stores the body once: each record is its recipient (and payload), not a copy of the body', {
    timeout: 120_000,
  }, async () => {
    // Three an hour: a few messages go (and can be compared with the outbox), the rest wait.
    const s = await startSender(app, 'big-template', { plan: 'pro', quota: { quota: 3, per: 'hour' } })
    // Just under the 512 KiB a body may have (docs/limits.md).
    const html = `<p>Hello {{first_name}}</p>${'<p>news</p>'.repeat(47_000)}`
    const reply = await postBatch(app, s.key, {
      template: { subject: 'Big {{first_name}}', html_body: html },
      recipients: addresses('big', 1000),
    })
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ success: true, total_count: 1000 })
    const batchId = reply.body.batch_id as number

    // All moved into the outbox (fewer than the expansion keeps ahead of delivery).
    await movedOut(batchId)
    const { records, contents } = await storedBytes(batchId, s.accountId)
    expect(records?.count).toBe(1000)
    expect(records?.own_content).toBe(0)
    // An address, a Message-ID, counters and timestamps: far below one copy of the body for all.
    expect(records?.record_bytes).toBeLessThan(1000 * 1024)
    expect(contents).toEqual({ count: 1, body_bytes: Buffer.byteLength(html) })

    // What was sent is rendered from it, and the outbox shows exactly that.
    const sent = await s.sink.waitForMessages(3, 60_000)
    await sentRecorded(batchId, 3)
    const rendered = html.replace('{{first_name}}', '')
    // The MIME part ends with a line break of its own. Compared as a boolean: a failure would print half a megabyte.
    for (const message of sent)
      expect(decodeMessage(message.raw).html?.replace(/\r\n$/, '') === rendered).toBe(true)
    const { records: listed } = await listOutbox(app.services.sql, s.accountId, {}, { size: 1000 })
    expect(listed).toHaveLength(1000)
    expect(new Set(listed.map((r) => r.subject))).toEqual(new Set(['Big ']))
    const first = listed.find((r) => r.status === 'sent')
    if (!first) throw new Error('no record was sent')
    const detail = await outboxRecord(app.services.sql, s.accountId, first.id)
    expect(detail).toMatchObject({ subject: 'Big ', text_body: null, batch_id: batchId })
    expect(detail.html_body === rendered).toBe(true)
  })
})

describe('a batch to a large audience', () => {
  const MEMBERS = 20_000
  // 16 KB per payload, placed in both bodies: the old path would queue 640 MB of rendered text.
  const NOTE = 16_000

  /** Five are delivered (the hourly quota), each rendered with its member's payload when sent. */
  async function expectSentRenderedPerMember(s: Sender, batchId: number): Promise<void> {
    const sent = await s.sink.waitForMessages(5, 60_000)
    await sentRecorded(batchId, 5)
    const note = 'n'.repeat(NOTE)
    for (const message of sent) {
      const to = message.envelope.to[0] as string
      const name = `M${/^member(\d+)@/.exec(to)?.[1]}`
      const decoded = decodeMessage(message.raw)
      expect(decoded.subject).toBe(`Hi ${name}`)
      expect(decoded.text === `Dear ${name}, ${note}`).toBe(true)
      expect(decoded.html === `<p>Dear ${name}</p><p>${note}</p>`).toBe(true)
    }
    const [record] = await app.services.sql<{ id: number; email: string }[]>`
      select id, to_addresses[1] as email from outbox where batch_id = ${batchId} and status = 'sent' order by id limit 1`
    const detail = await outboxRecord(app.services.sql, s.accountId, record?.id as number)
    const name = `M${/^member(\d+)@/.exec(record?.email ?? '')?.[1]}`
    // Compared as booleans: a failure would print 16 KB bodies.
    expect({
      subject: detail.subject,
      text: detail.text_body === `Dear ${name}, ${note}`,
      html: detail.html_body === `<p>Dear ${name}</p><p>${note}</p>`,
    }).toEqual({ subject: `Hi ${name}`, text: true, html: true })
  }

  it('expands 20000 members inside PostgreSQL: total_count right at creation, /health answering meanwhile, sent rendered per member', {
    timeout: 180_000,
  }, async () => {
    const s = await startSender(app, 'big-audience', { plan: 'pro', quota: { quota: 5, per: 'hour' } })
    const audienceId = await audienceWith(app, s.key, [])
    await app.services.sql`
      insert into audience_members (audience_id, email, payload)
      select ${audienceId}, 'member' || i || '@example.com',
        jsonb_build_object('first_name', 'M' || i, 'note', repeat('n', ${NOTE}::int))
      from generate_series(1, ${MEMBERS}::int) as i`

    // /health is asked again and again while the batch is being created.
    let creating = true
    const health: number[] = []
    const sampling = (async () => {
      while (creating) health.push((await app.requestRoot('/health')).status)
    })()
    const reply = await postBatch(app, s.key, {
      template: {
        subject: 'Hi {{first_name}}',
        text_body: 'Dear {{first_name}}, {{note}}',
        html_body: '<p>Dear {{first_name}}</p><p>{{note}}</p>',
      },
      audience_id: audienceId,
    })
    creating = false
    await sampling
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ success: true, total_count: MEMBERS })
    expect(health.length).toBeGreaterThan(0)
    expect(health.every((status) => status === 200)).toBe(true)
    const batchId = reply.body.batch_id as number
    expect(await batchOf(app, s.key, batchId)).toMatchObject({ total_count: MEMBERS })

    // Stored at creation, then moved into the outbox by the worker a chunk at a time, never more
    // than it keeps ahead of delivery (five are sent in the hour: the rest waits). Its last chunk
    // took the queue past `ahead - chunk`; the next waits until a whole chunk has drained.
    const { ahead, chunk } = DEFAULT_EXPANSION
    const queuedNow = async () => {
      const [row] = await app.services.sql<{ queued: number }[]>`
        select count(*)::int as queued from outbox where batch_id = ${batchId} and status = 'queued'`
      return row?.queued ?? 0
    }
    await poll(
      `more than ${ahead - chunk} records queued`,
      async () => ((await queuedNow()) > ahead - chunk ? true : undefined),
      60_000,
    )
    expect(await queuedNow()).toBeLessThanOrEqual(ahead)
    // The queued and the few sent (the hour's quota) are in the outbox; the rest is stored.
    const { records } = await storedBytes(batchId, s.accountId)
    expect(records?.own_content).toBe(0)
    expect(records?.count).toBeGreaterThan(ahead - chunk)
    expect(records?.count).toBeLessThanOrEqual(ahead + 5)
    const [stored] = await app.services.sql<{ count: number }[]>`
      select coalesce(sum(jsonb_array_length(recipients)), 0)::int as count from batch_recipients where batch_id = ${batchId}`
    expect(stored?.count).toBe(MEMBERS - (records?.count as number))
    // Queued in member order, each with its own payload and Message-ID.
    const order = await app.services.sql<{ email: string; first_name: string }[]>`
      select to_addresses[1] as email, payload ->> 'first_name' as first_name from outbox
      where batch_id = ${batchId} order by id limit 3`
    expect(order).toEqual([1, 2, 3].map((i) => ({ email: `member${i}@example.com`, first_name: `M${i}` })))
    const [ids] = await app.services.sql<{ distinct: number }[]>`
      select count(distinct message_id)::int as distinct from outbox where batch_id = ${batchId}`
    expect(ids?.distinct).toBe(records?.count)

    await expectSentRenderedPerMember(s, batchId)
    expect((await answerOf(await app.requestRoot('/health'))).status).toBe(200)
  })
})

/** Resolves once `n` of the batch's records are recorded sent (recording follows the server's reply). */
function sentRecorded(batchId: number, n: number): Promise<true> {
  return poll(`${n} records of batch ${batchId} recorded sent`, async () => {
    const [row] = await app.services.sql<{ sent: number }[]>`
      select count(*)::int as sent from outbox where batch_id = ${batchId} and status = 'sent'`
    return (row?.sent ?? 0) >= n ? true : undefined
  })
}
