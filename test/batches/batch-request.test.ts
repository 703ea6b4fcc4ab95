/**
 * Contract tests for POST /send/batch, GET /batches/{id} and DELETE /batches/{id} as seen without
 * a worker (docs/decisions.md,
 * "Batch states and modes", "Connection selection"). Nothing is sent here: every batch
 * stays `pending`.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { addConnection, disableConnection, pauseConnection } from '../../src/connections/connections.ts'
import { createKey } from '../../src/keys/keys.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import {
  addresses,
  answerOf,
  audienceWith,
  BATCH_NOT_FOUND,
  batchOf,
  createdBatch,
  deleteBatch,
  expectValidation,
  getBatch,
  INVALID_ID,
  INVALID_STATUS,
  postBatch,
  standard,
  templateWith,
  temporaryAudienceOf,
} from '../support/batches.ts'
import { expectAbout, humanText, TIMESTAMP } from '../support/matchers.ts'
import { type Sender, senderAddress, startSender } from '../support/sending.ts'
import type { SmtpSink } from '../support/smtp-sink.ts'

const app = useTestApp()
/** A Pro account with one connection; batches here are never sent (no worker runs). */
let pro: Sender
/** Another Pro account, whose audiences, templates and batches are not `pro`'s. */
let other: Sender

beforeAll(async () => {
  ;[pro, other] = await Promise.all([
    startSender(app, 'batchreq', { plan: 'pro' }),
    startSender(app, 'batchother', { plan: 'pro' }),
  ])
})

const inline = { subject: 'Hello {{first_name}}', text_body: 'Hi {{first_name}}', html_body: '<p>Hi</p>' }

function simple(status: number, error: string) {
  return { status, body: { error } }
}

/** The created body, exactly. */
function created(batchId: number, total: number) {
  return {
    status: 200,
    body: {
      success: true,
      batch_id: batchId,
      total_count: total,
      message: humanText,
      status_url: `/v1/batches/${batchId}`,
    },
  }
}

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
    const reply = await postBatch(app, pro.key, {
      template: inline,
      recipients: ['a@example.com', 'b@example.com'],
    })
    expect(reply).toEqual(created(reply.body.batch_id, 2))
    expect(Number.isInteger(reply.body.batch_id)).toBe(true)
  })

  it('template_id + audience_id: 200, one email per member', async () => {
    const templateId = await templateWith(app, pro.key, inline)
    const audienceId = await audienceWith(app, pro.key, [
      { email: 'm1@example.com', payload: { first_name: 'Ada' } },
      { email: 'm2@example.com' },
      { email: 'm3@example.com' },
    ])
    const reply = await postBatch(app, pro.key, { template_id: templateId, audience_id: audienceId })
    expect(reply).toEqual(created(reply.body.batch_id, 3))
  })

  it('template + audience_id and template_id + recipients are the other two combinations', async () => {
    const templateId = await templateWith(app, pro.key, inline)
    const audienceId = await audienceWith(app, pro.key, [{ email: 'x1@example.com' }])
    const a = await postBatch(app, pro.key, { template: inline, audience_id: audienceId })
    expect(a).toEqual(created(a.body.batch_id, 1))
    const b = await postBatch(app, pro.key, { template_id: templateId, recipients: ['y1@example.com'] })
    expect(b).toEqual(created(b.body.batch_id, 1))
  })

  it('emails: 200, one email per item', async () => {
    const reply = await postBatch(app, pro.key, {
      emails: [
        { to: 'e1@example.com', subject: 'One', text_body: 'first' },
        { to: 'e2@example.com', subject: 'Two', html_body: '<p>second</p>' },
      ],
    })
    expect(reply).toEqual(created(reply.body.batch_id, 2))
  })

  it('the status_url leads to the batch', async () => {
    const reply = await postBatch(app, pro.key, { template: inline, recipients: ['s@example.com'] })
    // A path from the host root, as the contract says.
    const res = await app.requestRoot(String(reply.body.status_url), { key: pro.key })
    expect(res.status).toBe(200)
    expect((await res.json()).batch.id).toBe(reply.body.batch_id)
  })
})

describe('POST /send/batch: the validation body', () => {
  const recipients = ['a@example.com']
  const item = { to: 'e@example.com', subject: 'Hi', text_body: 'x' }

  it('template together with template_id', async () => {
    expectValidation(await postBatch(app, pro.key, { template: inline, template_id: 1, recipients }))
  })

  it('recipients together with audience_id', async () => {
    expectValidation(await postBatch(app, pro.key, { template: inline, recipients, audience_id: 1 }))
  })

  it('emails together with each of template, template_id, recipients, audience_id', async () => {
    for (const extra of [{ template: inline }, { template_id: 1 }, { recipients }, { audience_id: 1 }]) {
      const field = Object.keys(extra)[0] as string
      expectValidation(await postBatch(app, pro.key, { emails: [item], ...extra }), [field])
    }
  })

  it('no content, no recipients, an empty body', async () => {
    expectValidation(await postBatch(app, pro.key, { recipients }))
    expectValidation(await postBatch(app, pro.key, { template: inline }))
    expectValidation(await postBatch(app, pro.key, { template_id: 1 }))
    expectValidation(await postBatch(app, pro.key, { audience_id: 1 }))
    const empty = await postBatch(app, pro.key, {})
    expectValidation(empty)
    expect(empty.body.error.issues.length, 'both missing parts are named').toBeGreaterThanOrEqual(2)
    expectValidation(await postBatch(app, pro.key, { name: 'only a name' }))
  })

  it('emails items with cc, bcc or an unknown property', async () => {
    expectValidation(await postBatch(app, pro.key, { emails: [{ ...item, cc: 'c@example.com' }] }), [
      'emails',
      0,
    ])
    expectValidation(await postBatch(app, pro.key, { emails: [item, { ...item, bcc: ['b@example.com'] }] }), [
      'emails',
      1,
    ])
    expectValidation(await postBatch(app, pro.key, { emails: [{ ...item, headers: { 'X-A': '1' } }] }), [
      'emails',
      0,
    ])
  })

  it('emails items without a body, without a subject, with several recipients in `to`', async () => {
    expectValidation(await postBatch(app, pro.key, { emails: [{ to: 'e@example.com', subject: 'Hi' }] }), [
      'emails',
      0,
    ])
    expectValidation(await postBatch(app, pro.key, { emails: [{ to: 'e@example.com', text_body: 'x' }] }), [
      'emails',
      0,
      'subject',
    ])
    expectValidation(await postBatch(app, pro.key, { emails: [{ ...item, subject: '' }] }), [
      'emails',
      0,
      'subject',
    ])
    expectValidation(
      await postBatch(app, pro.key, { emails: [{ ...item, to: ['a@example.com', 'b@example.com'] }] }),
      ['emails', 0, 'to'],
    )
    expectValidation(await postBatch(app, pro.key, { emails: [{ ...item, to: 'not an address' }] }), [
      'emails',
      0,
      'to',
    ])
    expectValidation(await postBatch(app, pro.key, { emails: [] }), ['emails'])
  })

  it('an inline template without a body or with an empty subject', async () => {
    expectValidation(await postBatch(app, pro.key, { template: { subject: 'Hi' }, recipients }), ['template'])
    expectValidation(
      await postBatch(app, pro.key, { template: { subject: '', text_body: 'x' }, recipients }),
      ['template', 'subject'],
    )
  })

  it('an invalid address in recipients, and an empty recipients list', async () => {
    expectValidation(
      await postBatch(app, pro.key, { template: inline, recipients: ['a@example.com', 'not-an-address'] }),
      ['recipients', 1],
    )
    expectValidation(await postBatch(app, pro.key, { template: inline, recipients: [] }), ['recipients'])
  })

  it('wrong-typed template_id and audience_id', async () => {
    expectValidation(await postBatch(app, pro.key, { template_id: 'one', recipients }), ['template_id'])
    expectValidation(await postBatch(app, pro.key, { template: inline, audience_id: 1.5 }), ['audience_id'])
  })

  it('nothing is recorded for a refused request', async () => {
    const before = await app.services.sql<{ n: number }[]>`select count(*)::int as n from batches`
    await postBatch(app, pro.key, { template: inline, template_id: 1, recipients })
    await postBatch(app, pro.key, { emails: [{ ...item, cc: 'c@example.com' }] })
    const after = await app.services.sql<{ n: number }[]>`select count(*)::int as n from batches`
    expect(after[0]?.n).toBe(before[0]?.n)
  })
})

describe('POST /send/batch: 1000 at most', () => {
  const tooLarge = (used: number) => standard(400, 'BATCH_TOO_LARGE', { limit: 1000, used })

  it('1000 recipients are accepted, 1001 unique ones are BATCH_TOO_LARGE', async () => {
    const thousand = await postBatch(app, pro.key, { template: inline, recipients: addresses('k', 1000) })
    expect(thousand).toEqual(created(thousand.body.batch_id, 1000))
    expect(await postBatch(app, pro.key, { template: inline, recipients: addresses('k', 1001) })).toEqual(
      tooLarge(1001),
    )
  })

  it('1001 recipients that de-duplicate case-insensitively to 1000 are accepted with total_count 1000', async () => {
    const recipients = [...addresses('d', 1000), 'D999@EXAMPLE.COM']
    const reply = await postBatch(app, pro.key, { template: inline, recipients })
    expect(reply).toEqual(created(reply.body.batch_id, 1000))
    expect((await batchOf(app, pro.key, reply.body.batch_id)).total_count).toBe(1000)
    // 1002 given, 1001 unique: refused, and `used` counts the unique ones.
    expect(
      await postBatch(app, pro.key, {
        template: inline,
        recipients: [...addresses('d', 1001), 'D0@example.com'],
      }),
    ).toEqual(tooLarge(1001))
  })

  it('1000 emails are accepted, 1001 are BATCH_TOO_LARGE', async () => {
    const emails = (n: number) =>
      addresses('em', n).map((to, i) => ({ to, subject: `Item ${i}`, text_body: 'x' }))
    const thousand = await postBatch(app, pro.key, { emails: emails(1000) })
    expect(thousand).toEqual(created(thousand.body.batch_id, 1000))
    expect(await postBatch(app, pro.key, { emails: emails(1001) })).toEqual(tooLarge(1001))
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

describe('POST /send/batch: audiences and saved templates', () => {
  it('`Invalid audience` for a missing audience and for another account’s', async () => {
    const foreign = await audienceWith(app, other.key, [{ email: 'f@example.com' }])
    const invalid = simple(400, 'Invalid audience')
    expect(await postBatch(app, pro.key, { template: inline, audience_id: 999_999 })).toEqual(invalid)
    expect(await postBatch(app, pro.key, { template: inline, audience_id: foreign })).toEqual(invalid)
    expect(await postBatch(app, pro.key, { template: inline, audience_id: 2 ** 40 })).toEqual(invalid)
  })

  it('`Audience has no members` for an empty audience', async () => {
    const empty = await audienceWith(app, pro.key, [])
    expect(await postBatch(app, pro.key, { template: inline, audience_id: empty })).toEqual(
      simple(400, 'Audience has no members'),
    )
  })

  it('RESOURCE_NOT_FOUND for a missing template_id and for another account’s', async () => {
    const foreign = await templateWith(app, other.key, inline)
    const missing = standard(404, 'RESOURCE_NOT_FOUND')
    expect(await postBatch(app, pro.key, { template_id: 999_999, recipients: ['a@example.com'] })).toEqual(
      missing,
    )
    expect(await postBatch(app, pro.key, { template_id: foreign, recipients: ['a@example.com'] })).toEqual(
      missing,
    )
  })
})

describe('POST /send/batch: connection selection (paused connections accept the batch)', () => {
  const body = { template: inline, recipients: ['c@example.com'] }

  it('NO_CONNECTION for an account without connections', async () => {
    const bare = await seedAccount(app, { plan: 'pro' })
    expect(await postBatch(app, bare.key, body)).toEqual(standard(403, 'NO_CONNECTION'))
  })

  it('CONNECTION_NOT_FOUND for a `from` of no connection, and for a disabled connection', async () => {
    const owner = await startSender(app, 'batchsel', { plan: 'pro' })
    expect(await postBatch(app, owner.key, { ...body, from: 'nobody@example.com' })).toEqual(
      standard(403, 'CONNECTION_NOT_FOUND'),
    )
    // `from` is compared case-insensitively.
    const ok = await postBatch(app, owner.key, { ...body, from: owner.from.toUpperCase() })
    expect(ok.status).toBe(200)
    await disableConnection(app.services.sql, owner.connectionId, true)
    expect(await postBatch(app, owner.key, body)).toEqual(standard(403, 'CONNECTION_NOT_FOUND'))
    expect(await postBatch(app, owner.key, { ...body, from: owner.from })).toEqual(
      standard(403, 'CONNECTION_NOT_FOUND'),
    )
  })

  it('CONNECTION_SCOPE_MISMATCH for a scoped key with `from` naming another connection', async () => {
    const owner = await startSender(app, 'batchscope', { plan: 'pro' })
    const sink = app.sinks.at(-1) as SmtpSink
    const second = await addConnection(app.services, {
      accountId: owner.accountId,
      ...sink.login,
      from: senderAddress('batchscope2'),
    })
    const scoped = await createKey(app.services.sql, {
      accountId: owner.accountId,
      name: 'scoped',
      connectionId: second.id,
    })
    expect(await postBatch(app, scoped.key, { ...body, from: owner.from })).toEqual(
      standard(403, 'CONNECTION_SCOPE_MISMATCH'),
    )
    expect((await postBatch(app, scoped.key, { ...body, from: second.from })).status).toBe(200)
    // Without `from`, the scoped connection is used, not the default (its records get the batch's).
    const id = (await postBatch(app, scoped.key, body)).body.batch_id
    const [row] = await app.services.sql<{ connection_id: number }[]>`
      select connection_id from batches where id = ${id}`
    expect(row?.connection_id).toBe(second.id)
  })

  it('a paused connection is accepted (default and named by `from`): the batch waits', async () => {
    const owner = await startSender(app, 'batchpaused', { plan: 'pro' })
    await pauseConnection(app.services.sql, owner.connectionId)
    const byDefault = await postBatch(app, owner.key, body)
    expect(byDefault).toEqual(created(byDefault.body.batch_id, 1))
    const byFrom = await postBatch(app, owner.key, { ...body, from: owner.from })
    expect(byFrom).toEqual(created(byFrom.body.batch_id, 1))
    expect((await batchOf(app, owner.key, byDefault.body.batch_id)).status).toBe('pending')
  })
})

describe('POST /send/batch: name and temporary audience', () => {
  it('without a name: `Batch Send <YYYY-MM-DD HH:MM:SS>` (UTC, now); a given name is kept', async () => {
    const unnamed = await createdBatch(app, pro.key, { template: inline, recipients: ['n@example.com'] })
    const batch = await batchOf(app, pro.key, unnamed)
    expect(batch.name).toMatch(/^Batch Send \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    expectAbout(batch.name.slice('Batch Send '.length), Date.now())
    const named = await createdBatch(app, pro.key, {
      name: 'Spring sale',
      template: inline,
      recipients: ['n@example.com'],
    })
    expect((await batchOf(app, pro.key, named)).name).toBe('Spring sale')
  })

  it('an empty name is none: the batch and its temporary audience take the default name', async () => {
    const id = await createdBatch(app, pro.key, { name: '', template: inline, recipients: ['e@example.com'] })
    const { name } = await batchOf(app, pro.key, id)
    expect(name).toMatch(/^Batch Send \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    const audience = await answerOf(
      await app.request(`/audiences/${await temporaryAudienceOf(app, id)}`, { key: pro.key }),
    )
    expect(audience.body.audience.name).toBe(name)
  })

  it('recipients become a temporary audience of the unique addresses: temporary 1, not listed, readable by id', async () => {
    const owner = await startSender(app, 'batchtemp', { plan: 'pro' })
    const lasting = await audienceWith(app, owner.key, [{ email: 'keep@example.com' }], 'Lasting')
    const id = await createdBatch(app, owner.key, {
      name: 'Temp',
      template: inline,
      recipients: [
        'Ada@example.com',
        'grace@example.com',
        'ADA@EXAMPLE.COM',
        'ada@example.com',
        'Grace@Example.com',
      ],
    })
    expect((await batchOf(app, owner.key, id)).total_count).toBe(2)
    const temporary = await temporaryAudienceOf(app, id)
    expect(temporary).not.toBeNull()

    const list = await answerOf(await app.request('/audiences', { key: owner.key }))
    expect(list.body.audiences.map((a: { id: number }) => a.id)).toEqual([lasting])

    const got = await answerOf(await app.request(`/audiences/${temporary}`, { key: owner.key }))
    expect(got).toEqual({
      status: 200,
      body: {
        success: true,
        audience: expect.objectContaining({
          id: temporary,
          temporary: 1,
          member_count: 2,
          user_id: owner.accountId,
        }),
      },
    })
    const members = await answerOf(await app.request(`/audiences/${temporary}/members`, { key: owner.key }))
    expect(members.body.members.map((m: { email: string }) => m.email)).toEqual([
      'Ada@example.com',
      'grace@example.com',
    ])
  })

  it('audience and emails batches make no temporary audience', async () => {
    const audienceId = await audienceWith(app, pro.key, [{ email: 'q@example.com' }])
    const a = await createdBatch(app, pro.key, { template: inline, audience_id: audienceId })
    const e = await createdBatch(app, pro.key, {
      emails: [{ to: 'q@example.com', subject: 'x', text_body: 'y' }],
    })
    expect(await temporaryAudienceOf(app, a)).toBeNull()
    expect(await temporaryAudienceOf(app, e)).toBeNull()
  })
})

describe('GET /batches/{id}', () => {
  it('INVALID_ID for a non-numeric id', async () => {
    expect(await getBatch(app, pro.key, 'abc')).toEqual(INVALID_ID)
  })

  it('BATCH_NOT_FOUND for a missing batch and for another account’s', async () => {
    const foreign = await createdBatch(app, other.key, { template: inline, recipients: ['o@example.com'] })
    expect(await getBatch(app, pro.key, 999_999)).toEqual(BATCH_NOT_FOUND)
    expect(await getBatch(app, pro.key, foreign)).toEqual(BATCH_NOT_FOUND)
    expect(await getBatch(app, pro.key, 2 ** 40)).toEqual(BATCH_NOT_FOUND)
    expect((await getBatch(app, other.key, foreign)).status).toBe(200)
  })

  it('a new batch no worker touched: pending, zero counts and progress, timestamps `YYYY-MM-DD HH:MM:SS`', async () => {
    const id = await createdBatch(app, pro.key, {
      name: 'Fresh',
      template: inline,
      recipients: ['p1@example.com', 'p2@example.com', 'P1@example.com'],
    })
    const reply = await getBatch(app, pro.key, id)
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
    const id = await createdBatch(app, pro.key, { template: inline, recipients: ['del@example.com'] })
    expect(await deleteBatch(app, pro.key, id)).toEqual(INVALID_STATUS)
    expect((await batchOf(app, pro.key, id)).status).toBe('pending')
    expect(await temporaryAudienceOf(app, id)).not.toBeNull()
  })

  it('INVALID_ID, and BATCH_NOT_FOUND for a missing batch and for another account’s', async () => {
    const foreign = await createdBatch(app, other.key, { template: inline, recipients: ['o@example.com'] })
    expect(await deleteBatch(app, pro.key, 'abc')).toEqual(INVALID_ID)
    expect(await deleteBatch(app, pro.key, 999_999)).toEqual(BATCH_NOT_FOUND)
    expect(await deleteBatch(app, pro.key, foreign)).toEqual(BATCH_NOT_FOUND)
    expect((await getBatch(app, other.key, foreign)).status).toBe(200)
  })
})
