import { describe, expect, it } from 'vitest'
import { AppError } from '../../src/app-error.ts'
import { chooseConnection, chosenConnection, connectionRef } from '../../src/connections/selection.ts'
import type { SendingConnection } from '../../src/db/connections.ts'

function connection(fields: Partial<SendingConnection> = {}): SendingConnection {
  return {
    id: 7,
    account_id: 1,
    from_address: 'News@Example.com',
    host: 'smtp.example.com',
    port: 587,
    username: 'user',
    password_encrypted: 'sealed',
    quota: null,
    quota_period: null,
    rate: 60,
    disabled: false,
    paused: false,
    is_default: true,
    ...fields,
  }
}

const unscoped = { accountId: 1, connectionId: null }
const scoped = { accountId: 1, connectionId: 7 }

describe('connectionRef: the selection order', () => {
  it('a key scoped to a connection names it, whatever the from', () => {
    expect(connectionRef(scoped, 'other@example.com')).toEqual({ id: 7 })
    expect(connectionRef(scoped, undefined)).toEqual({ id: 7 })
  })

  it('otherwise from names the account’s connection for that address', () => {
    expect(connectionRef(unscoped, 'news@example.com')).toEqual({ accountId: 1, address: 'news@example.com' })
  })

  it('otherwise the account’s default connection', () => {
    expect(connectionRef(unscoped, undefined)).toEqual({ accountId: 1 })
  })
})

describe('chooseConnection', () => {
  it('gives the connection found when nothing refuses it', () => {
    const found = connection()
    expect(chooseConnection(unscoped, undefined, found, 'now')).toBe(found)
    expect(chooseConnection(unscoped, 'news@example.com', found, 'now')).toBe(found)
    expect(chooseConnection(scoped, 'NEWS@example.COM', found, 'now')).toBe(found)
  })

  it('a scoped key whose connection is gone: not found', () => {
    expect(chooseConnection(scoped, undefined, undefined, 'now')).toMatchObject({
      refused: 'CONNECTION_NOT_FOUND',
    })
  })

  it('a scoped key with another from: a scope mismatch naming both addresses', () => {
    expect(chooseConnection(scoped, 'other@example.com', connection(), 'queued')).toEqual({
      refused: 'CONNECTION_SCOPE_MISMATCH',
      message: 'This API key may only send from News@Example.com, not other@example.com',
    })
  })

  it('a from that is no connection of the account: not found', () => {
    expect(chooseConnection(unscoped, 'nobody@example.com', undefined, 'now')).toEqual({
      refused: 'CONNECTION_NOT_FOUND',
      message: "nobody@example.com is not the address of one of this account's connections",
    })
  })

  it('no from and no default connection: no connection', () => {
    expect(chooseConnection(unscoped, undefined, undefined, 'queued')).toMatchObject({
      refused: 'NO_CONNECTION',
    })
  })

  it.each(['now', 'queued'] as const)('a disabled connection is refused as not found (%s)', (mode) => {
    const choice = chooseConnection(unscoped, undefined, connection({ disabled: true }), mode)
    expect(choice).toMatchObject({
      refused: 'CONNECTION_NOT_FOUND',
      message: expect.stringMatching(/disabled/),
    })
  })

  it('a paused connection is refused when the caller waits, as paused when it is the default', () => {
    const choice = chooseConnection(unscoped, undefined, connection({ paused: true }), 'now')
    expect(choice).toMatchObject({ refused: 'CONNECTION_PAUSED' })
  })

  it('a paused connection a from names is refused as not found', () => {
    const paused = connection({ paused: true })
    expect(chooseConnection(unscoped, 'news@example.com', paused, 'now')).toMatchObject({
      refused: 'CONNECTION_NOT_FOUND',
      message: 'The connection for News@Example.com is paused',
    })
    expect(chooseConnection(scoped, 'news@example.com', paused, 'now')).toMatchObject({
      refused: 'CONNECTION_NOT_FOUND',
    })
    expect(chooseConnection(scoped, undefined, paused, 'now')).toMatchObject({ refused: 'CONNECTION_PAUSED' })
  })

  it('a paused connection is accepted for the queue: the mail waits for it', () => {
    const paused = connection({ paused: true })
    expect(chooseConnection(unscoped, 'news@example.com', paused, 'queued')).toBe(paused)
    expect(chooseConnection(unscoped, undefined, paused, 'queued')).toBe(paused)
  })
})

describe('chosenConnection', () => {
  it('raises the refusal as the catalog’s error', () => {
    const error = (() => {
      try {
        chosenConnection(unscoped, undefined, undefined, 'now')
      } catch (caught) {
        return caught
      }
    })()
    expect(error).toBeInstanceOf(AppError)
    expect(error).toMatchObject({
      code: 'NO_CONNECTION',
      message: 'This account has no connection to send through',
    })
  })
})
