import { describe, expect, it } from 'vitest'
import { isDriverConnectionFault } from '../../src/db/driver-faults.ts'

function withCode(code: string): Error {
  return Object.assign(new Error('connection went away'), { code })
}

describe('isDriverConnectionFault', () => {
  it.each([
    'CONNECTION_CLOSED',
    'CONNECTION_DESTROYED',
    'CONNECTION_ENDED',
    'CONNECT_TIMEOUT',
    'ECONNREFUSED',
    'ECONNRESET',
    'EPIPE',
    'ETIMEDOUT',
    '08006',
    '08003',
    '57P01',
    '57P02',
    '57P03',
  ])('takes %s for a lost connection', (code) => {
    expect(isDriverConnectionFault(withCode(code))).toBe(true)
  })

  it('takes a TypeError thrown inside postgres.js for one', () => {
    const error = new TypeError("Cannot read properties of null (reading 'write')")
    error.stack = `${error.message}\n    at nextWrite (/app/node_modules/postgres/src/connection.js:255:12)`
    expect(isDriverConnectionFault(error)).toBe(true)
  })

  it("takes node-postgres's lost connection, thrown inside it, for one", () => {
    const error = new Error('Connection terminated unexpectedly')
    error.stack = `${error.message}\n    at /app/node_modules/pg/lib/client.js:694:17`
    expect(isDriverConnectionFault(error)).toBe(true)
    const elsewhere = new Error('Connection terminated unexpectedly')
    elsewhere.stack = `${elsewhere.message}\n    at read (/app/src/imap/reader.ts:10:3)`
    expect(isDriverConnectionFault(elsewhere)).toBe(false)
  })

  it('leaves every other error to end the process', () => {
    const ours = new TypeError("Cannot read properties of undefined (reading 'id')")
    ours.stack = `${ours.message}\n    at send (/app/src/sending/send.ts:10:3)`
    expect(isDriverConnectionFault(ours)).toBe(false)
    expect(isDriverConnectionFault(withCode('23505'))).toBe(false)
    expect(isDriverConnectionFault(withCode('ENOSPC'))).toBe(false)
    expect(isDriverConnectionFault(new Error('CONNECTION_CLOSED'))).toBe(false)
    expect(isDriverConnectionFault('CONNECTION_CLOSED')).toBe(false)
    expect(isDriverConnectionFault(undefined)).toBe(false)
  })
})
