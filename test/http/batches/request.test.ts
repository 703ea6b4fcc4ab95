/**
 * POST /send/batch: who may send a batch, its three forms, the validation body and its size,
 * as seen without a worker. Nothing is sent here: every batch stays `pending`.
 */
import { describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from '../../support/app.ts'
import { created, inline, simple, useBatchAccounts } from '../../support/batch-request.ts'
import {
  addresses,
  answerOf,
  audienceWith,
  batchOf,
  deleteBatch,
  expectValidation,
  getBatch,
  postBatch,
  standard,
  templateWith,
} from '../../support/batches.ts'
import { startSender } from '../../support/sending.ts'

const app = useTestApp()
const accounts = useBatchAccounts(app)

describe('plan and authentication', () => {
  const refusal = standard(403, 'FEATURE_NOT_AVAILABLE', { feature: 'batch_sending', upgradeRequired: true })

  it('Free: all three operations answer 403 FEATURE_NOT_AVAILABLE before anything is validated', async () => {
    const free = await seedAccount(app, { plan: 'free' })
    const valid = { template: inline, recipients: ['a@example.com'] }
    const results = await Promise.all([
      postBatch(app, free.key, valid),
      // Invalid bodies: the plan is refused first.
      postBatch(app, free.key, {}),
      postBatch(app, free.key, { template: inline, template_id: 1, recipients: ['nope'] }),
      postBatch(app, free.key, { recipients: addresses('free', 1001), template: inline }),
      answerOf(await app.request('/send/batch', { method: 'POST', key: free.key, body: '{"not json' })),
      getBatch(app, free.key, 1),
      getBatch(app, free.key, 'abc'),
      deleteBatch(app, free.key, 1),
      deleteBatch(app, free.key, 'abc'),
    ])
    for (const result of results) expect(result).toEqual(refusal)
  })

  it('Free with a connection is refused too, and nothing is recorded', async () => {
    const free = await startSender(app, 'batchfree', { plan: 'free' })
    expect(await postBatch(app, free.key, { template: inline, recipients: ['a@example.com'] })).toEqual(
      refusal,
    )
    const [row] = await app.services.sql<{ n: number }[]>`
      select count(*)::int as n from batches where account_id = ${free.accountId}`
    expect(row?.n).toBe(0)
  })

  it('401 without a bearer header or with a wrong key, for all three operations', async () => {
    const missing = simple(401, 'Missing or invalid Authorization header')
    const invalid = simple(401, 'Invalid or expired API token')
    const body = { template: inline, recipients: ['a@example.com'] }
    expect(await answerOf(await app.request('/send/batch', { method: 'POST', body }))).toEqual(missing)
    expect(await answerOf(await app.request('/batches/1'))).toEqual(missing)
    expect(await answerOf(await app.request('/batches/1', { method: 'DELETE' }))).toEqual(missing)
    expect(await postBatch(app, 'mr_wrong', body)).toEqual(invalid)
    expect(await getBatch(app, 'mr_wrong', 1)).toEqual(invalid)
    expect(await deleteBatch(app, 'mr_wrong', 1)).toEqual(invalid)
  })
})

describe('POST /send/batch: the three forms', () => {
  it('template + recipients: 200 with exactly the created body', async () => {
    const reply = await postBatch(app, accounts.pro.key, {
      template: inline,
      recipients: ['a@example.com', 'b@example.com'],
    })
    expect(reply).toEqual(created(reply.body.batch_id, 2))
    expect(Number.isInteger(reply.body.batch_id)).toBe(true)
  })

  it('template_id + audience_id: 200, one email per member', async () => {
    const templateId = await templateWith(app, accounts.pro.key, inline)
    const audienceId = await audienceWith(app, accounts.pro.key, [
      { email: 'm1@example.com', payload: { first_name: 'Ada' } },
      { email: 'm2@example.com' },
      { email: 'm3@example.com' },
    ])
    const reply = await postBatch(app, accounts.pro.key, { template_id: templateId, audience_id: audienceId })
    expect(reply).toEqual(created(reply.body.batch_id, 3))
  })

  it('template + audience_id and template_id + recipients are the other two combinations', async () => {
    const templateId = await templateWith(app, accounts.pro.key, inline)
    const audienceId = await audienceWith(app, accounts.pro.key, [{ email: 'x1@example.com' }])
    const a = await postBatch(app, accounts.pro.key, { template: inline, audience_id: audienceId })
    expect(a).toEqual(created(a.body.batch_id, 1))
    const b = await postBatch(app, accounts.pro.key, {
      template_id: templateId,
      recipients: ['y1@example.com'],
    })
    expect(b).toEqual(created(b.body.batch_id, 1))
  })

  it('emails: 200, one email per item', async () => {
    const reply = await postBatch(app, accounts.pro.key, {
      emails: [
        { to: 'e1@example.com', subject: 'One', text_body: 'first' },
        { to: 'e2@example.com', subject: 'Two', html_body: '<p>second</p>' },
      ],
    })
    expect(reply).toEqual(created(reply.body.batch_id, 2))
  })

  it('the status_url leads to the batch', async () => {
    const reply = await postBatch(app, accounts.pro.key, { template: inline, recipients: ['s@example.com'] })
    // A path from the host root, as the contract says.
    const res = await app.requestRoot(String(reply.body.status_url), { key: accounts.pro.key })
    expect(res.status).toBe(200)
    expect((await res.json()).batch.id).toBe(reply.body.batch_id)
  })
})

describe('POST /send/batch: the validation body', () => {
  const recipients = ['a@example.com']
  const item = { to: 'e@example.com', subject: 'Hi', text_body: 'x' }

  it('template together with template_id', async () => {
    expectValidation(await postBatch(app, accounts.pro.key, { template: inline, template_id: 1, recipients }))
  })

  it('recipients together with audience_id', async () => {
    expectValidation(await postBatch(app, accounts.pro.key, { template: inline, recipients, audience_id: 1 }))
  })

  it('emails together with each of template, template_id, recipients, audience_id', async () => {
    for (const extra of [{ template: inline }, { template_id: 1 }, { recipients }, { audience_id: 1 }]) {
      const field = Object.keys(extra)[0] as string
      expectValidation(await postBatch(app, accounts.pro.key, { emails: [item], ...extra }), [field])
    }
  })

  it('no content, no recipients, an empty body', async () => {
    expectValidation(await postBatch(app, accounts.pro.key, { recipients }))
    expectValidation(await postBatch(app, accounts.pro.key, { template: inline }))
    expectValidation(await postBatch(app, accounts.pro.key, { template_id: 1 }))
    expectValidation(await postBatch(app, accounts.pro.key, { audience_id: 1 }))
    const empty = await postBatch(app, accounts.pro.key, {})
    expectValidation(empty)
    expect(empty.body.error.issues.length, 'both missing parts are named').toBeGreaterThanOrEqual(2)
    expectValidation(await postBatch(app, accounts.pro.key, { name: 'only a name' }))
  })

  it('emails items with cc, bcc or an unknown property', async () => {
    expectValidation(await postBatch(app, accounts.pro.key, { emails: [{ ...item, cc: 'c@example.com' }] }), [
      'emails',
      0,
    ])
    expectValidation(
      await postBatch(app, accounts.pro.key, { emails: [item, { ...item, bcc: ['b@example.com'] }] }),
      ['emails', 1],
    )
    expectValidation(
      await postBatch(app, accounts.pro.key, { emails: [{ ...item, headers: { 'X-A': '1' } }] }),
      ['emails', 0],
    )
  })

  it('emails items without a body, without a subject, with several recipients in `to`', async () => {
    expectValidation(
      await postBatch(app, accounts.pro.key, { emails: [{ to: 'e@example.com', subject: 'Hi' }] }),
      ['emails', 0],
    )
    expectValidation(
      await postBatch(app, accounts.pro.key, { emails: [{ to: 'e@example.com', text_body: 'x' }] }),
      ['emails', 0, 'subject'],
    )
    expectValidation(await postBatch(app, accounts.pro.key, { emails: [{ ...item, subject: '' }] }), [
      'emails',
      0,
      'subject',
    ])
    expectValidation(
      await postBatch(app, accounts.pro.key, {
        emails: [{ ...item, to: ['a@example.com', 'b@example.com'] }],
      }),
      ['emails', 0, 'to'],
    )
    expectValidation(
      await postBatch(app, accounts.pro.key, { emails: [{ ...item, to: 'not an address' }] }),
      ['emails', 0, 'to'],
    )
    expectValidation(await postBatch(app, accounts.pro.key, { emails: [] }), ['emails'])
  })

  it('an inline template without a body or with an empty subject', async () => {
    expectValidation(await postBatch(app, accounts.pro.key, { template: { subject: 'Hi' }, recipients }), [
      'template',
    ])
    expectValidation(
      await postBatch(app, accounts.pro.key, { template: { subject: '', text_body: 'x' }, recipients }),
      ['template', 'subject'],
    )
  })

  it('an invalid address in recipients, and an empty recipients list', async () => {
    expectValidation(
      await postBatch(app, accounts.pro.key, {
        template: inline,
        recipients: ['a@example.com', 'not-an-address'],
      }),
      ['recipients', 1],
    )
    expectValidation(await postBatch(app, accounts.pro.key, { template: inline, recipients: [] }), [
      'recipients',
    ])
  })

  it('wrong-typed template_id and audience_id', async () => {
    expectValidation(await postBatch(app, accounts.pro.key, { template_id: 'one', recipients }), [
      'template_id',
    ])
    expectValidation(await postBatch(app, accounts.pro.key, { template: inline, audience_id: 1.5 }), [
      'audience_id',
    ])
  })

  it('nothing is recorded for a refused request', async () => {
    const before = await app.services.sql<{ n: number }[]>`select count(*)::int as n from batches`
    await postBatch(app, accounts.pro.key, { template: inline, template_id: 1, recipients })
    await postBatch(app, accounts.pro.key, { emails: [{ ...item, cc: 'c@example.com' }] })
    const after = await app.services.sql<{ n: number }[]>`select count(*)::int as n from batches`
    expect(after[0]?.n).toBe(before[0]?.n)
  })
})

describe('POST /send/batch: 1000 at most', () => {
  const tooLarge = (used: number) => standard(400, 'BATCH_TOO_LARGE', { limit: 1000, used })

  it('1000 recipients are accepted, 1001 unique ones are BATCH_TOO_LARGE', async () => {
    const thousand = await postBatch(app, accounts.pro.key, {
      template: inline,
      recipients: addresses('k', 1000),
    })
    expect(thousand).toEqual(created(thousand.body.batch_id, 1000))
    expect(
      await postBatch(app, accounts.pro.key, { template: inline, recipients: addresses('k', 1001) }),
    ).toEqual(tooLarge(1001))
  })

  it('1001 recipients that de-duplicate case-insensitively to 1000 are accepted with total_count 1000', async () => {
    const recipients = [...addresses('d', 1000), 'D999@EXAMPLE.COM']
    const reply = await postBatch(app, accounts.pro.key, { template: inline, recipients })
    expect(reply).toEqual(created(reply.body.batch_id, 1000))
    expect((await batchOf(app, accounts.pro.key, reply.body.batch_id)).total_count).toBe(1000)
    // 1002 given, 1001 unique: refused, and `used` counts the unique ones.
    expect(
      await postBatch(app, accounts.pro.key, {
        template: inline,
        recipients: [...addresses('d', 1001), 'D0@example.com'],
      }),
    ).toEqual(tooLarge(1001))
  })

  it('1000 emails are accepted, 1001 are BATCH_TOO_LARGE', async () => {
    const emails = (n: number) =>
      addresses('em', n).map((to, i) => ({ to, subject: `Item ${i}`, text_body: 'x' }))
    const thousand = await postBatch(app, accounts.pro.key, { emails: emails(1000) })
    expect(thousand).toEqual(created(thousand.body.batch_id, 1000))
    expect(await postBatch(app, accounts.pro.key, { emails: emails(1001) })).toEqual(tooLarge(1001))
  })

  it('BATCH_TOO_LARGE leaves nothing behind: no batch, no temporary audience', async () => {
    const owner = await startSender(app, 'batchbig', { plan: 'pro' })
    await postBatch(app, owner.key, { template: inline, recipients: addresses('big', 1001) })
    const [row] = await app.services.sql<{ batches: number; audiences: number }[]>`
      select (select count(*)::int from batches where account_id = ${owner.accountId}) as batches,
             (select count(*)::int from audiences where account_id = ${owner.accountId}) as audiences`
    expect(row).toEqual({ batches: 0, audiences: 0 })
  })
})
