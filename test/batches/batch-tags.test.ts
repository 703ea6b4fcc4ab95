/**
 * A batch's tags go with every one of its emails, in each of its modes: GET /emails shows them on
 * each, and the tag filter finds the batch's emails; the items of `emails` take none of their own.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import { useTestApp } from '../support/app.ts'
import { addresses, audienceWith, createdBatch, postBatch, waitForBatchEnd } from '../support/batches.ts'
import { validationBody } from '../support/matchers.ts'
import { type Sender, startSender } from '../support/sending.ts'

const app = useTestApp()

beforeAll(async () => {
  await app.worker({ retry: retryPolicy(50, 3, 50) })
})

const TAGS = [
  { name: 'campaign', value: 'spring' },
  { name: 'segment', value: 'loyal_customers-2' },
]

async function listed(sender: Sender, query: string): Promise<{ id: number; tags: unknown }[]> {
  const res = await app.request(`/emails?${query}&limit=100`, { key: sender.key })
  expect(res.status).toBe(200)
  return ((await res.json()) as { emails: { id: number; tags: unknown }[] }).emails
}

/** Sends the batch with TAGS to its end; every one of its `count` emails carries them, and only they match. */
async function expectTagged(sender: Sender, body: Record<string, unknown>, count: number) {
  const id = await createdBatch(app, sender.key, { ...body, tags: TAGS })
  expect((await waitForBatchEnd(app, sender.key, id)).status).toBe('completed')
  const emails = await listed(sender, `batch_id=${id}`)
  expect(emails).toHaveLength(count)
  for (const email of emails) expect(email.tags).toEqual(TAGS)
  const found = await listed(sender, 'tag=campaign:spring&tag=segment:loyal_customers-2')
  expect(found.map((e) => e.id).sort()).toEqual(emails.map((e) => e.id).sort())
}

describe('the tags of a batch', () => {
  it('go with every email of an audience batch as it is expanded', async () => {
    const sender = await startSender(app, 'tags-audience', { plan: 'pro' })
    const audience_id = await audienceWith(
      app,
      sender.key,
      addresses('m', 5).map((email) => ({ email })),
    )
    const untagged = await createdBatch(app, sender.key, {
      template: { subject: 'Plain', text_body: 'x' },
      audience_id,
    })
    await waitForBatchEnd(app, sender.key, untagged)
    await expectTagged(sender, { template: { subject: 'Hi {{email}}', text_body: 'Hello' }, audience_id }, 5)
  })

  it('go with every email of an `emails` batch and of a batch to recipients', async () => {
    const emailsSender = await startSender(app, 'tags-emails', { plan: 'pro' })
    const emails = addresses('e', 3).map((to) => ({ to, subject: 'Hi', text_body: 'Hello' }))
    await expectTagged(emailsSender, { emails }, 3)
    const recipientsSender = await startSender(app, 'tags-recipients', { plan: 'pro' })
    const template = { subject: 'Hi', text_body: 'Hello' }
    await expectTagged(recipientsSender, { template, recipients: addresses('r', 2) }, 2)
  })

  it("are checked as an email's, and an item of `emails` takes none of its own", async () => {
    const sender = await startSender(app, 'tags-refused', { plan: 'pro' })
    const template = { subject: 'Hi', text_body: 'Hello' }
    const recipients = ['a@example.com']
    const twice = await postBatch(app, sender.key, { template, recipients, tags: [TAGS[0], TAGS[0]] })
    expect(twice).toEqual({
      status: 400,
      body: validationBody([{ path: ['tags', 1, 'name'], code: 'custom' }]),
    })
    const eleven = Array.from({ length: 11 }, (_, i) => ({ name: `t${i}`, value: 'v' }))
    const tooMany = await postBatch(app, sender.key, { template, recipients, tags: eleven })
    expect(tooMany).toEqual({ status: 400, body: validationBody([{ path: ['tags'], code: 'too_big' }]) })
    const item = await postBatch(app, sender.key, {
      emails: [{ to: 'a@example.com', subject: 'Hi', text_body: 'Hello', tags: TAGS }],
    })
    expect(item.status).toBe(400)
    expect(item.body.error.issues[0].path).toEqual(['emails', 0])
    expect(await listed(sender, 'tag=campaign:spring')).toEqual([])
  })
})
