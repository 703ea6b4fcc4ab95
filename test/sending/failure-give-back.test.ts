/**
 * A failed send records its failure and gives back the units it reserved in one transaction:
 * were the process to stop between the two, a quota unit would be lost (counted, never sent).
 * A trigger makes the give-back fail, standing for a crash at that moment; the failure must
 * then not be recorded either.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { email, enqueued, waitFor } from '../support/queue.ts'
import { postSend, type Sender, startSender } from '../support/sending.ts'

const app = useTestApp()

beforeAll(async () => {
  await app.services.sql`
    create function refuse_give_back() returns trigger language plpgsql as $$
    begin raise exception 'give-back failed'; end $$`
})

const REFUSED = { rejectData: { code: 554, message: '5.7.1 Message rejected' } }

/** A sender whose quota cannot be given back: the give-back statement fails. */
async function senderWithStuckQuota(label: string, plan: 'free' | 'pro'): Promise<Sender> {
  const s = await startSender(app, label, {
    plan,
    quota: { quota: 10, per: 'day' },
    behaviour: REFUSED,
  })
  await app.services.sql.unsafe(`
    create trigger stuck_quota_${s.connectionId} before update on quota_usage for each row
    when (old.connection_id = ${s.connectionId} and new.used < old.used)
    execute function refuse_give_back()`)
  return s
}

async function state(s: Sender, outboxId: number): Promise<{ status: string; quotaUsed: number }> {
  const [row] = await app.services.sql<{ status: string; quota_used: number }[]>`
    select o.status, (select coalesce(sum(used), 0)::int from quota_usage where connection_id = ${s.connectionId})
      as quota_used
    from outbox o where o.id = ${outboxId}`
  if (!row) throw new Error(`no outbox record ${outboxId}`)
  return { status: row.status, quotaUsed: row.quota_used }
}

describe('the failure of a send and the give-back of its units are one transaction', () => {
  it('POST /send: when the give-back fails, the attempt is not recorded as failed', async () => {
    const s = await senderWithStuckQuota('stuck-send', 'free')
    const reply = await postSend(app, s.key, email())
    expect(reply.status).toBe(500)
    // The unit is still counted, so the record must still say the outcome is open, not `failed`.
    expect(await state(s, await lastOutboxId(s))).toEqual({ status: 'sending', quotaUsed: 1 })
  })

  it('POST /send: without the fault, the failure is recorded and the unit given back', async () => {
    const s = await startSender(app, 'give-back', {
      quota: { quota: 10, per: 'day' },
      behaviour: REFUSED,
    })
    const reply = await postSend(app, s.key, email())
    expect(reply.status).toBe(500)
    expect(await state(s, await lastOutboxId(s))).toEqual({ status: 'failed', quotaUsed: 0 })
  })

  it('the queue: when the give-back fails, the message is not ended failed', async () => {
    const s = await senderWithStuckQuota('stuck-queue', 'pro')
    await app.worker()
    const id = await enqueued(app, s.key)
    await waitFor('the first attempt', async () => ((await attempts(id)) > 0 ? true : undefined))
    // The refusal comes back at once; its settlement fails with the give-back.
    await sleep(1_000)
    const after = await state(s, id)
    expect(after.quotaUsed).toBe(1)
    expect(after.status).not.toBe('failed')
  })
})

async function attempts(outboxId: number): Promise<number> {
  const [row] = await app.services.sql<
    { attempts: number }[]
  >`select attempts from outbox where id = ${outboxId}`
  return row?.attempts ?? 0
}

async function lastOutboxId(s: Sender): Promise<number> {
  const [row] = await app.services.sql<{ id: number }[]>`
    select max(id) as id from outbox where connection_id = ${s.connectionId}`
  return row?.id ?? 0
}
