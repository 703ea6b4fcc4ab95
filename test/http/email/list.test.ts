/**
 * GET /v1/emails: an account's emails newest first, as GET /emails/{id} shows each, with the
 * list's filters, paging and refusals.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { type SeededAccount, seedAccount, useTestApp } from '../../support/app.ts'
import { addresses, createdBatch, waitForBatchEnd } from '../../support/batches.ts'
import { type Answer, useEmailsApi } from '../../support/emails.ts'
import { validationBody } from '../../support/matchers.ts'
import { email } from '../../support/queue.ts'
import { postSend, type Sender, startSender } from '../../support/sending.ts'

const app = useTestApp()
const { emailOf, list, proSender } = useEmailsApi(app)

describe('GET /emails', () => {
  /** An account with `count` sent emails, oldest first. */
  async function withSent(count: number): Promise<{ s: Sender; ids: number[] }> {
    const s = await startSender(app, 'lister')
    const ids: number[] = []
    for (let i = 0; i < count; i++) {
      const sent = await postSend(app, s.key, email({ subject: `Number ${i}` }))
      ids.push(sent.body.outboxId as number)
    }
    return { s, ids }
  }

  const ids = (page: Answer) => page.body.emails.map((e: { id: number }) => e.id)

  it('lists newest first, each email as GET /emails/{id} gives it without its history, headers and attachments; Free plan included', async () => {
    const { s, ids: sent } = await withSent(3)
    const page = await list(s.key)
    expect(page.status).toBe(200)
    expect(page.body).toEqual({
      success: true,
      emails: expect.any(Array),
      pagination: { limit: 50, hasMore: false, nextCursor: null },
    })
    expect(ids(page)).toEqual([...sent].reverse())
    const {
      history: _,
      headers: _h,
      attachments: _a,
      ...one
    } = (await emailOf(s.key, sent[0] as number)).body.email
    expect(page.body.emails[2]).toEqual(one)
  })

  it("never lists another account's emails", async () => {
    const { s } = await withSent(1)
    const other = await seedAccount(app)
    expect((await list(other.key)).body.emails).toEqual([])
    expect(ids(await list(s.key))).toHaveLength(1)
  })

  it('pages with the cursor it gives until hasMore is false; limit 1 and 100 are taken', async () => {
    const { s, ids: sent } = await withSent(5)
    const seen: number[] = []
    let query = '?limit=2'
    const sizes: number[] = []
    for (;;) {
      const page = await list(s.key, query)
      expect(page.status).toBe(200)
      expect(page.body.pagination.limit).toBe(2)
      sizes.push(page.body.emails.length)
      seen.push(...ids(page))
      if (!page.body.pagination.hasMore) {
        expect(page.body.pagination.nextCursor).toBeNull()
        break
      }
      expect(page.body.pagination.nextCursor).toEqual(expect.any(String))
      query = `?limit=2&cursor=${encodeURIComponent(page.body.pagination.nextCursor)}`
    }
    expect(sizes).toEqual([2, 2, 1])
    expect(seen).toEqual([...sent].reverse())

    const one = await list(s.key, '?limit=1')
    expect(ids(one)).toEqual([sent[4]])
    expect(one.body.pagination).toEqual({ limit: 1, hasMore: true, nextCursor: expect.any(String) })
    const hundred = await list(s.key, '?limit=100')
    expect(hundred.body.pagination).toEqual({ limit: 100, hasMore: false, nextCursor: null })
    expect(ids(hundred)).toHaveLength(5)
  })

  it('a page of exactly the rest says there is no more', async () => {
    const { s } = await withSent(2)
    expect((await list(s.key, '?limit=2')).body.pagination).toEqual({
      limit: 2,
      hasMore: false,
      nextCursor: null,
    })
  })

  it('filters by status and by batch', async () => {
    const s = await proSender('filters', { rejectRecipients: ['gone@example.com'] })
    const sent = await postSend(app, s.key, email({ to: 'ok@example.com' }))
    const failed = await postSend(app, s.key, email({ to: 'gone@example.com' }))
    expect(failed.status).toBe(500)
    const batchId = await createdBatch(app, s.key, {
      template: { subject: 'B', text_body: 'b' },
      recipients: addresses('member', 2),
    })
    await waitForBatchEnd(app, s.key, batchId)

    const sentOnes = await list(s.key, '?status=sent')
    expect(sentOnes.body.emails.every((e: { status: string }) => e.status === 'sent')).toBe(true)
    expect(sentOnes.body.emails.map((e: { to: string[] }) => e.to[0]).sort()).toEqual([
      ...addresses('member', 2),
      'ok@example.com',
    ])
    expect(ids(sentOnes)).toContain(sent.body.outboxId)
    const failedOnes = await list(s.key, '?status=failed')
    expect(failedOnes.body.emails).toEqual([
      expect.objectContaining({ status: 'failed', to: ['gone@example.com'] }),
    ])
    expect(ids(await list(s.key, '?status=queued'))).toEqual([])

    const ofBatch = await list(s.key, `?batch_id=${batchId}`)
    expect(ofBatch.body.emails.map((e: { to: string[] }) => e.to[0]).sort()).toEqual(addresses('member', 2))
    expect(ofBatch.body.emails.every((e: { batch_id: number }) => e.batch_id === batchId)).toBe(true)
    // Another account's batch has no emails here.
    const other = await seedAccount(app)
    expect((await list(other.key, `?batch_id=${batchId}`)).body.emails).toEqual([])
    expect(ids(await list(s.key, `?batch_id=${batchId}&status=failed`))).toEqual([])
  })

  it('filters by a range of UTC days on creation, both ends included', async () => {
    const { s, ids: sent } = await withSent(3)
    const [early, late, today] = sent as [number, number, number]
    // Creation instants on both sides of a day's boundary.
    await app.services.sql`update outbox set created_at = '2025-01-10 23:59:59.999+00' where id = ${early}`
    await app.services.sql`update outbox set created_at = '2025-01-11 00:00:00+00' where id = ${late}`
    expect(ids(await list(s.key, '?date_from=2025-01-10&date_to=2025-01-10'))).toEqual([early])
    expect(ids(await list(s.key, '?date_from=2025-01-11&date_to=2025-01-11'))).toEqual([late])
    expect(ids(await list(s.key, '?date_from=2025-01-10&date_to=2025-01-11'))).toEqual([late, early])
    expect(ids(await list(s.key, '?date_to=2025-01-10'))).toEqual([early])
    expect(ids(await list(s.key, '?date_from=2025-01-12'))).toEqual([today])
    expect(ids(await list(s.key, '?date_to=2025-01-09'))).toEqual([])
  })

  describe('refuses what it cannot take with the validation body', () => {
    const cases: [string, string][] = [
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?limit=-1', 'limit'],
      ['?limit=ten', 'limit'],
      ['?status=delivered', 'status'],
      ['?status=', 'status'],
      ['?batch_id=0', 'batch_id'],
      ['?batch_id=abc', 'batch_id'],
      ['?batch_id=2147483648', 'batch_id'],
      ['?date_from=2025-1-1', 'date_from'],
      ['?date_from=2025-02-30', 'date_from'],
      ['?date_to=2025-13-01', 'date_to'],
      ['?date_to=0000-01-01', 'date_to'],
      ['?date_from=2025-01-02&date_to=2025-01-01', 'date_from'],
      ['?cursor=', 'cursor'],
      ['?cursor=not-a-cursor', 'cursor'],
      // "012" and "0": not how a cursor is written.
      [`?cursor=${Buffer.from('012').toString('base64url')}`, 'cursor'],
      [`?cursor=${Buffer.from('0').toString('base64url')}`, 'cursor'],
      [`?cursor=${Buffer.from('99999999999').toString('base64url')}`, 'cursor'],
      [`?cursor=${'A'.repeat(65)}`, 'cursor'],
    ]
    let owner: SeededAccount
    beforeAll(async () => {
      owner = await seedAccount(app)
    })
    for (const [query, path] of cases) {
      it(`${query} -> 400 at ${path}`, async () => {
        const answer = await list(owner.key, query)
        expect(answer.status).toBe(400)
        expect(answer.body).toEqual(validationBody(answer.body.error.issues))
        expect(answer.body.error.issues.map((i: { path: string[] }) => i.path)).toContainEqual([path])
      })
    }

    it('takes the edges: limit 1 and 100, batch_id 1 and 2147483647, February 29th of a leap year', async () => {
      for (const query of [
        '?limit=1',
        '?limit=100',
        '?batch_id=1',
        '?batch_id=2147483647',
        '?date_from=2024-02-29&date_to=2024-02-29',
      ]) {
        expect((await list(owner.key, query)).status, query).toBe(200)
      }
    })
  })
})
