/**
 * Tags on POST /send and POST /enqueue: every bound on both sides, shown by GET /emails/{id} and
 * the list in the order given, and GET /emails?tag=name:value, which keeps the emails carrying
 * every tag asked for, on the account asking only.
 */
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../../support/app.ts'
import { type Answer, useEmailsApi } from '../../support/emails.ts'
import { validationBody } from '../../support/matchers.ts'
import { email, enqueued, postEnqueue } from '../../support/queue.ts'
import { postSend, type Sender } from '../../support/sending.ts'

const app = useTestApp()
const { emailOf, list, proSender } = useEmailsApi(app)

type Tag = { name: string; value: string }

const tag = (name: string, value: string): Tag => ({ name, value })

/** `count` distinct tags, `t0=v0`, `t1=v1`... */
const tagsOf = (count: number) => Array.from({ length: count }, (_, i) => tag(`t${i}`, `v${i}`))

async function sent(s: Sender, tags?: Tag[]): Promise<number> {
  const reply = await postSend(app, s.key, email(tags === undefined ? {} : { tags }))
  expect(reply.status, JSON.stringify(reply.body)).toBe(200)
  return reply.body.outboxId as number
}

const ids = (page: Answer) => page.body.emails.map((e: { id: number }) => e.id)

describe('tags on an email', () => {
  it('are kept in the order given by /send and /enqueue, [] when none; the message itself carries none', async () => {
    const s = await proSender('tagged')
    const ten = tagsOf(10).reverse()
    const byKey = await sent(s, ten)
    const queued = await enqueued(app, s.key, email({ tags: [tag('campaign', 'spring_sale-2')] }))
    const plain = await sent(s)
    expect((await emailOf(s.key, byKey)).body.email.tags).toEqual(ten)
    expect((await emailOf(s.key, queued)).body.email.tags).toEqual([tag('campaign', 'spring_sale-2')])
    expect((await emailOf(s.key, plain)).body.email.tags).toEqual([])
    const page = await list(s.key)
    expect(page.body.emails.map((e: { tags: Tag[] }) => e.tags)).toEqual([
      [],
      [tag('campaign', 'spring_sale-2')],
      ten,
    ])
    const [message] = await s.sink.waitForMessages(1)
    expect(message?.raw.toString()).not.toContain('v9')
  })

  it('takes 10 tags and names and values of 256 characters, and refuses 11 and 257 at their paths', async () => {
    const s = await proSender('bounds')
    const long = 'x'.repeat(256)
    expect((await postSend(app, s.key, email({ tags: tagsOf(10) }))).status).toBe(200)
    expect((await postSend(app, s.key, email({ tags: [tag(long, long)] }))).status).toBe(200)
    for (const post of [postSend, postEnqueue]) {
      const eleven = await post(app, s.key, email({ tags: tagsOf(11) }))
      expect(eleven.status).toBe(400)
      expect(eleven.body).toEqual(validationBody([{ path: ['tags'], code: 'too_big' }]))
      const tooLong = await post(app, s.key, email({ tags: [tag(`${long}x`, 'a'), tag('b', `${long}x`)] }))
      expect(tooLong.body).toEqual(
        validationBody([
          { path: ['tags', 0, 'name'], code: 'too_big' },
          { path: ['tags', 1, 'value'], code: 'too_big' },
        ]),
      )
    }
  })

  it('refuses empty names and values and any character but ASCII letters, digits, _ and -', async () => {
    const s = await proSender('characters')
    const empty = await postSend(app, s.key, email({ tags: [tag('', 'a'), tag('b', '')] }))
    expect(empty.body).toEqual(
      validationBody([
        { path: ['tags', 0, 'name'], code: 'too_small' },
        { path: ['tags', 0, 'name'], code: 'invalid_format' },
        { path: ['tags', 1, 'value'], code: 'too_small' },
        { path: ['tags', 1, 'value'], code: 'invalid_format' },
      ]),
    )
    for (const bad of ['a b', 'a:b', 'café', 'a.b', 'a/b', '<b>', 'a\nb', 'a\u0000']) {
      const reply = await postSend(app, s.key, email({ tags: [tag(bad, 'ok'), tag('ok', bad)] }))
      expect(reply.status, bad).toBe(400)
      expect(reply.body, bad).toEqual(
        validationBody([
          { path: ['tags', 0, 'name'], code: 'invalid_format' },
          { path: ['tags', 1, 'value'], code: 'invalid_format' },
        ]),
      )
    }
    const missing = await postSend(app, s.key, email({ tags: [{ name: 'a' }] }))
    expect(missing.body).toEqual(validationBody([{ path: ['tags', 0, 'value'], code: 'invalid_type' }]))
    expect((await list(s.key)).body.emails).toEqual([])
  })

  it('refuses a name given twice at the repeated one; names differing in letter case are two', async () => {
    const s = await proSender('duplicates')
    for (const post of [postSend, postEnqueue]) {
      const twice = await post(app, s.key, email({ tags: [tag('a', '1'), tag('b', '2'), tag('a', '3')] }))
      expect(twice.status).toBe(400)
      expect(twice.body).toEqual(validationBody([{ path: ['tags', 2, 'name'], code: 'custom' }]))
    }
    expect((await list(s.key)).body.emails).toEqual([])
    const id = await sent(s, [tag('Env', 'a'), tag('env', 'b')])
    expect((await emailOf(s.key, id)).body.email.tags).toEqual([tag('Env', 'a'), tag('env', 'b')])
  })
})

describe('GET /emails?tag=name:value', () => {
  it('keeps the emails carrying the tag, and with two, those carrying both', async () => {
    const s = await proSender('filter')
    const spring = await sent(s, [tag('campaign', 'spring'), tag('env', 'prod')])
    const springTest = await sent(s, [tag('campaign', 'spring'), tag('env', 'test')])
    const autumn = await enqueued(
      app,
      s.key,
      email({ tags: [tag('campaign', 'autumn'), tag('env', 'prod')] }),
    )
    await sent(s)
    expect(ids(await list(s.key, '?tag=campaign:spring'))).toEqual([springTest, spring])
    expect(ids(await list(s.key, '?tag=env:prod'))).toEqual([autumn, spring])
    expect(ids(await list(s.key, '?tag=campaign:spring&tag=env:prod'))).toEqual([spring])
    expect(ids(await list(s.key, '?tag=env:prod&tag=campaign:autumn&limit=1'))).toEqual([autumn])
    // Exact: no prefix, no other letter case, no value under another name.
    for (const query of ['campaign:sprin', 'Campaign:spring', 'env:spring', 'campaign:spring&tag=env:none']) {
      expect(ids(await list(s.key, `?tag=${query}`)), query).toEqual([])
    }
  })

  it('pages through the tagged emails with the cursor, the filter kept', async () => {
    const s = await proSender('filter-pages')
    const tagged = [await sent(s, [tag('a', 'b')]), await sent(s), await sent(s, [tag('a', 'b')])]
    const first = await list(s.key, '?tag=a:b&limit=1')
    expect(ids(first)).toEqual([tagged[2]])
    const cursor = encodeURIComponent(first.body.pagination.nextCursor)
    const second = await list(s.key, `?tag=a:b&limit=1&cursor=${cursor}`)
    expect(ids(second)).toEqual([tagged[0]])
    expect(second.body.pagination.hasMore).toBe(false)
  })

  it("never lists another account's emails carrying the same tags", async () => {
    const mine = await proSender('filter-mine')
    const theirs = await proSender('filter-theirs')
    const own = await sent(mine, [tag('campaign', 'shared')])
    await sent(mine, [tag('campaign', 'other')])
    await sent(theirs, [tag('campaign', 'shared')])
    await enqueued(app, theirs.key, email({ tags: [tag('campaign', 'shared')] }))
    expect(ids(await list(mine.key, '?tag=campaign:shared'))).toEqual([own])
    expect(ids(await list(theirs.key, '?tag=campaign:shared'))).toHaveLength(2)
  })

  it('refuses a malformed tag at its index with the validation body, and more than 10', async () => {
    const s = await proSender('filter-refusals')
    for (const bad of [
      'campaign',
      'campaign:',
      ':spring',
      'a:b:c',
      'a b:c',
      `${'x'.repeat(257)}:v`,
      'caf%C3%A9:x',
    ]) {
      const page = await list(s.key, `?tag=ok:fine&tag=${bad}`)
      expect(page.status, bad).toBe(400)
      expect(page.body, bad).toEqual(validationBody([{ path: ['tag', 1], code: 'invalid_format' }]))
    }
    const ten = Array.from({ length: 10 }, (_, i) => `tag=t${i}:v${i}`).join('&')
    expect((await list(s.key, `?${ten}`)).status).toBe(200)
    const eleven = await list(s.key, `?${ten}&tag=t10:v10`)
    expect(eleven.body).toEqual(validationBody([{ path: ['tag'], code: 'too_big' }]))
  })
})
