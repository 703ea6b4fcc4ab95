/**
 * GET /batches/{id} and DELETE /batches/{id} before a worker ran the batch (docs/decisions.md,
 * "Batch states and modes"). Nothing is sent here: every batch stays `pending`.
 */
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../../support/app.ts'
import { inline, useBatchAccounts } from '../../support/batch-request.ts'
import {
  BATCH_NOT_FOUND,
  batchOf,
  createdBatch,
  deleteBatch,
  getBatch,
  INVALID_ID,
  INVALID_STATUS,
  temporaryAudienceOf,
} from '../../support/batches.ts'
import { expectAbout, TIMESTAMP } from '../../support/matchers.ts'

const app = useTestApp()
const accounts = useBatchAccounts(app)

describe('GET /batches/{id}', () => {
  it('INVALID_ID for a non-numeric id', async () => {
    expect(await getBatch(app, accounts.pro.key, 'abc')).toEqual(INVALID_ID)
  })

  it('BATCH_NOT_FOUND for a missing batch and for another account’s', async () => {
    const foreign = await createdBatch(app, accounts.other.key, {
      template: inline,
      recipients: ['o@example.com'],
    })
    expect(await getBatch(app, accounts.pro.key, 999_999)).toEqual(BATCH_NOT_FOUND)
    expect(await getBatch(app, accounts.pro.key, foreign)).toEqual(BATCH_NOT_FOUND)
    expect(await getBatch(app, accounts.pro.key, 2 ** 40)).toEqual(BATCH_NOT_FOUND)
    expect((await getBatch(app, accounts.other.key, foreign)).status).toBe(200)
  })

  it('a new batch no worker touched: pending, zero counts and progress, timestamps `YYYY-MM-DD HH:MM:SS`', async () => {
    const id = await createdBatch(app, accounts.pro.key, {
      name: 'Fresh',
      template: inline,
      recipients: ['p1@example.com', 'p2@example.com', 'P1@example.com'],
    })
    const reply = await getBatch(app, accounts.pro.key, id)
    expect(reply).toEqual({
      status: 200,
      body: {
        success: true,
        batch: {
          id,
          name: 'Fresh',
          status: 'pending',
          total_count: 2,
          sent_count: 0,
          failed_count: 0,
          progress: 0,
          created_at: expect.stringMatching(TIMESTAMP),
          updated_at: expect.stringMatching(TIMESTAMP),
        },
      },
    })
    expectAbout(reply.body.batch.created_at, Date.now())
    expectAbout(reply.body.batch.updated_at, Date.now())
  })
})

describe('DELETE /batches/{id} before it ran', () => {
  it('a pending batch: 400 INVALID_STATUS, and the batch is still there', async () => {
    const id = await createdBatch(app, accounts.pro.key, {
      template: inline,
      recipients: ['del@example.com'],
    })
    expect(await deleteBatch(app, accounts.pro.key, id)).toEqual(INVALID_STATUS)
    expect((await batchOf(app, accounts.pro.key, id)).status).toBe('pending')
    expect(await temporaryAudienceOf(app, id)).not.toBeNull()
  })

  it('INVALID_ID, and BATCH_NOT_FOUND for a missing batch and for another account’s', async () => {
    const foreign = await createdBatch(app, accounts.other.key, {
      template: inline,
      recipients: ['o@example.com'],
    })
    expect(await deleteBatch(app, accounts.pro.key, 'abc')).toEqual(INVALID_ID)
    expect(await deleteBatch(app, accounts.pro.key, 999_999)).toEqual(BATCH_NOT_FOUND)
    expect(await deleteBatch(app, accounts.pro.key, foreign)).toEqual(BATCH_NOT_FOUND)
    expect((await getBatch(app, accounts.other.key, foreign)).status).toBe(200)
  })
})
