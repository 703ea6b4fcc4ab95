/**
 * The SDK's suppressions.*, generated from the contract, against the server: typed, the address
 * URL-encoded in the path, and SUPPRESSION_NOT_FOUND raised as a MailroomError.
 */
import { createClient, MailroomError } from '@mailroom/sdk'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { seedAccount, useTestApp } from './support/app.ts'
import { humanText } from './support/matchers.ts'

const app = useTestApp({}, { listen: true })

describe('suppressions through the SDK', () => {
  it('adds, lists, reads and removes an address, then answers SUPPRESSION_NOT_FOUND', async () => {
    const owner = await seedAccount(app)
    const mailroom = createClient({ baseUrl: app.baseUrl, apiKey: owner.key })
    const address = 'ada+list@example.com'

    expect(await mailroom.suppressions.create({ emails: [address], scope: 'marketing' })).toEqual({
      success: true,
      inserted: 1,
      existing: 0,
    })
    const page = await mailroom.suppressions.list({ reason: 'manual', limit: 10 })
    expectTypeOf(page.suppressions[0]?.reason).toEqualTypeOf<
      'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual' | undefined
    >()
    expect(page.suppressions.map((s) => s.email)).toEqual([address])
    const { suppression } = await mailroom.suppressions.get(address)
    expect(suppression).toMatchObject({ email: address, reason: 'manual', scope: 'marketing' })
    expect(await mailroom.suppressions.delete(address)).toEqual({ success: true, message: humanText })

    let caught: unknown
    try {
      await mailroom.suppressions.get(address)
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(MailroomError)
    expect(caught).toMatchObject({ status: 404, code: 'SUPPRESSION_NOT_FOUND' })
  })
})
