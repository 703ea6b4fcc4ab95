/**
 * POST /send/batch: the audiences and saved templates it reads, the connection it chooses
 * (docs/decisions.md, "Connection selection"), its name and the temporary audience of its
 * recipients, as seen without a worker. Nothing is sent here: every batch stays `pending`.
 */
import { describe, expect, it } from 'vitest'
import { addConnection, disableConnection, pauseConnection } from '../../../src/connections/connections.ts'
import { createKey } from '../../../src/keys/keys.ts'
import { seedAccount, useTestApp } from '../../support/app.ts'
import { created, inline, simple, useBatchAccounts } from '../../support/batch-request.ts'
import {
  answerOf,
  audienceWith,
  batchOf,
  createdBatch,
  postBatch,
  standard,
  templateWith,
  temporaryAudienceOf,
} from '../../support/batches.ts'
import { expectAbout } from '../../support/matchers.ts'
import { senderAddress, startSender } from '../../support/sending.ts'
import type { SmtpSink } from '../../support/smtp-sink.ts'

const app = useTestApp()
const accounts = useBatchAccounts(app)

describe('POST /send/batch: audiences and saved templates', () => {
  it('`Invalid audience` for a missing audience and for another account’s', async () => {
    const foreign = await audienceWith(app, accounts.other.key, [{ email: 'f@example.com' }])
    const invalid = simple(400, 'Invalid audience')
    expect(await postBatch(app, accounts.pro.key, { template: inline, audience_id: 999_999 })).toEqual(
      invalid,
    )
    expect(await postBatch(app, accounts.pro.key, { template: inline, audience_id: foreign })).toEqual(
      invalid,
    )
    expect(await postBatch(app, accounts.pro.key, { template: inline, audience_id: 2 ** 40 })).toEqual(
      invalid,
    )
  })

  it('`Audience has no members` for an empty audience', async () => {
    const empty = await audienceWith(app, accounts.pro.key, [])
    expect(await postBatch(app, accounts.pro.key, { template: inline, audience_id: empty })).toEqual(
      simple(400, 'Audience has no members'),
    )
  })

  it('RESOURCE_NOT_FOUND for a missing template_id and for another account’s', async () => {
    const foreign = await templateWith(app, accounts.other.key, inline)
    const missing = standard(404, 'RESOURCE_NOT_FOUND')
    expect(
      await postBatch(app, accounts.pro.key, { template_id: 999_999, recipients: ['a@example.com'] }),
    ).toEqual(missing)
    expect(
      await postBatch(app, accounts.pro.key, { template_id: foreign, recipients: ['a@example.com'] }),
    ).toEqual(missing)
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
    const unnamed = await createdBatch(app, accounts.pro.key, {
      template: inline,
      recipients: ['n@example.com'],
    })
    const batch = await batchOf(app, accounts.pro.key, unnamed)
    expect(batch.name).toMatch(/^Batch Send \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    expectAbout(batch.name.slice('Batch Send '.length), Date.now())
    const named = await createdBatch(app, accounts.pro.key, {
      name: 'Spring sale',
      template: inline,
      recipients: ['n@example.com'],
    })
    expect((await batchOf(app, accounts.pro.key, named)).name).toBe('Spring sale')
  })

  it('an empty name is none: the batch and its temporary audience take the default name', async () => {
    const id = await createdBatch(app, accounts.pro.key, {
      name: '',
      template: inline,
      recipients: ['e@example.com'],
    })
    const { name } = await batchOf(app, accounts.pro.key, id)
    expect(name).toMatch(/^Batch Send \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    const audience = await answerOf(
      await app.request(`/audiences/${await temporaryAudienceOf(app, id)}`, { key: accounts.pro.key }),
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
    const audienceId = await audienceWith(app, accounts.pro.key, [{ email: 'q@example.com' }])
    const a = await createdBatch(app, accounts.pro.key, { template: inline, audience_id: audienceId })
    const e = await createdBatch(app, accounts.pro.key, {
      emails: [{ to: 'q@example.com', subject: 'x', text_body: 'y' }],
    })
    expect(await temporaryAudienceOf(app, a)).toBeNull()
    expect(await temporaryAudienceOf(app, e)).toBeNull()
  })
})
