import { describe, expect, it } from 'vitest'
import {
  deleteConnection,
  disableConnection,
  listConnections,
  pauseConnection,
  resumeConnection,
  updateConnection,
} from '../../src/connections/connections.ts'
import { openPassword } from '../../src/smtp/secret-box.ts'
import { TEST_SECRET } from '../support/app.ts'
import { useConnections } from '../support/connections.ts'
import { expectAbout } from '../support/matchers.ts'
import { refusal } from '../support/refusal.ts'

const { app, sinks, account, add, rowCount, sealedPassword } = useConnections()

describe('default connection', () => {
  /** A Pro account and three connections added one after the other. */
  async function threeConnections() {
    const owner = await account('pro')
    const first = await add(owner.id)
    const second = await add(owner.id)
    const third = await add(owner.id)
    return { owner, first, second, third }
  }

  /** [id, is_default] of each listed connection of the account. */
  async function defaults(accountId: number) {
    const listed = await listConnections(app.services.sql, accountId)
    return listed.map((c) => [c.id, c.is_default])
  }

  it('makes the first connection the default and later ones not', async () => {
    const { owner, first, second, third } = await threeConnections()
    expect([first.is_default, second.is_default, third.is_default]).toEqual([true, false, false])
    expect(await defaults(owner.id)).toEqual([
      [first.id, true],
      [second.id, false],
      [third.id, false],
    ])
  })

  it('makes the oldest remaining connection the default when the default is deleted', async () => {
    const { owner, first, second, third } = await threeConnections()
    expect(await deleteConnection(app.services.sql, first.id)).toEqual({
      deleted: true,
      new_default_id: second.id,
    })
    expect(await defaults(owner.id)).toEqual([
      [second.id, true],
      [third.id, false],
    ])
  })

  it('keeps the default when another connection is deleted, and says which it is', async () => {
    const { owner, first, second, third } = await threeConnections()
    expect(await deleteConnection(app.services.sql, second.id)).toEqual({
      deleted: true,
      new_default_id: first.id,
    })
    expect(await defaults(owner.id)).toEqual([
      [first.id, true],
      [third.id, false],
    ])
  })

  it('has no default left once the last connection is deleted; the next one added becomes it', async () => {
    const owner = await account('free')
    const only = await add(owner.id)
    expect(await deleteConnection(app.services.sql, only.id)).toEqual({ deleted: true, new_default_id: null })
    expect(await rowCount(owner.id)).toBe(0)
    expect(await add(owner.id)).toMatchObject({ is_default: true })
  })

  it('refuses to delete an unknown connection', async () => {
    expect((await refusal(deleteConnection(app.services.sql, 2_000_000_000))).code).toBe('UNKNOWN_CONNECTION')
  })
})

describe('plan limits: Free 1 connection, Pro unlimited', () => {
  it('refuses a second connection on Free with PLAN_LIMIT_REACHED and saves nothing', async () => {
    const owner = await account('free')
    await add(owner.id)
    const error = await refusal(add(owner.id))
    expect(error.code).toBe('PLAN_LIMIT_REACHED')
    expect(error.message).toMatch(/connection/i)
    expect(await rowCount(owner.id)).toBe(1)
  })

  it('lets Pro add several', async () => {
    const owner = await account('pro')
    for (let i = 0; i < 3; i++) await add(owner.id)
    expect(await rowCount(owner.id)).toBe(3)
  })
})

describe('status: disable, enable, pause, resume', () => {
  it('disables and enables', async () => {
    const owner = await account()
    const conn = await add(owner.id)
    expect(await disableConnection(app.services.sql, conn.id, true)).toMatchObject({
      id: conn.id,
      status: 'disabled',
    })
    expect((await listConnections(app.services.sql, owner.id))[0]?.status).toBe('disabled')
    expect(await disableConnection(app.services.sql, conn.id, false)).toMatchObject({
      id: conn.id,
      status: 'active',
    })
    expect((await listConnections(app.services.sql, owner.id))[0]?.status).toBe('active')
  })

  it('pauses until resumed when no duration is given', async () => {
    const owner = await account()
    const conn = await add(owner.id)
    const paused = await pauseConnection(app.services.sql, conn.id)
    expect(paused).toMatchObject({ id: conn.id, status: 'paused' })
    expect((await listConnections(app.services.sql, owner.id))[0]?.status).toBe('paused')
    expect(await resumeConnection(app.services.sql, conn.id)).toMatchObject({ id: conn.id, status: 'active' })
    expect((await listConnections(app.services.sql, owner.id))[0]?.status).toBe('active')
  })

  it('pauses for a number of minutes, then is active again by itself', async () => {
    const owner = await account()
    const conn = await add(owner.id)
    const paused = await pauseConnection(app.services.sql, conn.id, 30)
    expect(paused).toMatchObject({ id: conn.id, status: 'paused' })
    expectAbout(paused.paused_until, Date.now() + 30 * 60 * 1000)
    // The thirty minutes pass.
    await app.db.sql`update connections set paused_until = now() - interval '1 second' where id = ${conn.id}`
    expect((await listConnections(app.services.sql, owner.id))[0]?.status).toBe('active')
  })

  it('accepts a one-minute pause and refuses zero or negative minutes', async () => {
    const owner = await account()
    const conn = await add(owner.id)
    for (const minutes of [0, -5]) {
      expect((await refusal(() => pauseConnection(app.services.sql, conn.id, minutes))).code).toBe(
        'INVALID_CONNECTION',
      )
      expect((await listConnections(app.services.sql, owner.id))[0]?.status).toBe('active')
    }
    expect(await pauseConnection(app.services.sql, conn.id, 1)).toMatchObject({ status: 'paused' })
  })

  it('resumes a connection early from a timed pause', async () => {
    const owner = await account()
    const conn = await add(owner.id)
    await pauseConnection(app.services.sql, conn.id, 60)
    expect(await resumeConnection(app.services.sql, conn.id)).toMatchObject({ status: 'active' })
  })

  it('refuses an unknown connection', async () => {
    for (const attempt of [
      () => disableConnection(app.services.sql, 2_000_000_000, true),
      () => disableConnection(app.services.sql, 2_000_000_000, false),
      () => pauseConnection(app.services.sql, 2_000_000_000),
      () => pauseConnection(app.services.sql, 2_000_000_000, 10),
      () => resumeConnection(app.services.sql, 2_000_000_000),
    ]) {
      expect((await refusal(attempt)).code).toBe('UNKNOWN_CONNECTION')
    }
  })
})

describe('updateConnection', () => {
  it('changes the quota and the rate, keeping the rest', async () => {
    const owner = await account()
    const conn = await add(owner.id, { quota: { quota: 100, per: 'day' }, rate: 30 })
    const updated = await updateConnection(app.services, conn.id, { quota: { quota: 20, per: 'hour' } })
    expect(updated).toMatchObject({ id: conn.id, quota: 20, quota_period: 'hour', rate: 30, from: conn.from })
    const again = await updateConnection(app.services, conn.id, { rate: 60000 })
    expect(again).toMatchObject({ quota: 20, quota_period: 'hour', rate: 60000 })
    expect(await updateConnection(app.services, conn.id, { rate: 1 })).toMatchObject({ rate: 1 })
  })

  it('removes the quota with quota: null', async () => {
    const owner = await account()
    const conn = await add(owner.id, { quota: { quota: 100, per: 'day' } })
    expect(await updateConnection(app.services, conn.id, { quota: null })).toMatchObject({
      quota: null,
      quota_period: null,
    })
  })

  it('refuses out-of-range values and leaves the connection unchanged', async () => {
    const owner = await account()
    const conn = await add(owner.id, { quota: { quota: 100, per: 'day' }, rate: 30 })
    for (const input of [
      { rate: 0 },
      { rate: 60001 },
      { quota: { quota: 0, per: 'day' } },
      { quota: { quota: -3, per: 'hour' } },
      { quota: { quota: 10, per: 'week' } },
    ]) {
      expect((await refusal(updateConnection(app.services, conn.id, input))).code).toBe('INVALID_CONNECTION')
    }
    expect((await listConnections(app.services.sql, owner.id))[0]).toMatchObject({
      quota: 100,
      quota_period: 'day',
      rate: 30,
    })
  })

  it('tests a new password against the server first: a wrong one is refused and the old one kept', async () => {
    const owner = await account()
    const conn = await add(owner.id)
    const sealedBefore = await sealedPassword(conn.id)
    const attemptsBefore = sinks.starttls2525.authAttempts
    const error = await refusal(updateConnection(app.services, conn.id, { password: 'wrong-new-password' }))
    expect(sinks.starttls2525.authAttempts).toBe(attemptsBefore + 1)
    expect(error.code).toBe('SMTP_LOGIN_FAILED')
    expect(error.message).toContain('535')
    expect(error.message).not.toContain('wrong-new-password')
    expect(await sealedPassword(conn.id)).toBe(sealedBefore)
    expect(openPassword(TEST_SECRET, await sealedPassword(conn.id))).toBe(sinks.starttls2525.password)
  })

  it('stores a new password that the server accepts, encrypted', async () => {
    const owner = await account()
    const conn = await add(owner.id)
    const sealedBefore = await sealedPassword(conn.id)
    const attemptsBefore = sinks.starttls2525.authAttempts
    const updated = await updateConnection(app.services, conn.id, { password: sinks.starttls2525.password })
    expect(sinks.starttls2525.authAttempts).toBe(attemptsBefore + 1)
    expect(updated).toMatchObject({ id: conn.id, status: 'active' })
    const sealedAfter = await sealedPassword(conn.id)
    expect(sealedAfter).not.toBe(sealedBefore)
    expect(sealedAfter).not.toContain(sinks.starttls2525.password)
    expect(openPassword(TEST_SECRET, sealedAfter)).toBe(sinks.starttls2525.password)
  })

  it('refuses an unknown connection', async () => {
    expect((await refusal(updateConnection(app.services, 2_000_000_000, { rate: 10 }))).code).toBe(
      'UNKNOWN_CONNECTION',
    )
  })
})
