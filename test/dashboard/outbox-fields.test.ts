/**
 * The dashboard's message page shows where replies go, the extra header fields and each file's
 * name, type and size, every value escaped; a message without them shows no such section, and
 * another account's message page shows none of it.
 */
import { randomBytes } from 'node:crypto'
import { beforeAll, describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from '../support/app.ts'
import { type Client, signedIn, textOf } from '../support/dashboard.ts'
import { ESCAPED, HOSTILE, json } from '../support/dashboard-pages.ts'
import { startSink } from '../support/sending.ts'

const app = useTestApp()

/** A filename may hold no `/`: markup that needs none, then one long unbroken word. */
const FILENAME = `<img src=x onerror=alert(1)>&"'${'q'.repeat(220)}.pdf`
const HEADER_NAME = `X-<b>"&'`
const LONG_VALUE = `${HOSTILE} ${'v'.repeat(998)}`.slice(0, 998)

let owner: Client
let withFields: number
let without: number

beforeAll(async () => {
  const sink = await startSink(app)
  const seeded = await seedAccount(app, { plan: 'pro', connection: { ...sink.login, rate: 6000 } })
  const send = async (extra: Record<string, unknown>) =>
    (await json(
      await app.request('/send', {
        key: seeded.key,
        body: { to: 'ada@example.com', subject: 'Files', html_body: '<img src="cid:logo">', ...extra },
      }),
    )) as { outboxId: number }
  withFields = (
    await send({
      reply_to: ['desk@example.com', 'help@example.com'],
      headers: { [HEADER_NAME]: LONG_VALUE, 'X-Ticket': '4411' },
      attachments: [
        { filename: FILENAME, content: randomBytes(1536).toString('base64') },
        {
          filename: 'logo',
          content: randomBytes(10).toString('base64'),
          content_type: 'image/png',
          content_id: 'logo',
        },
      ],
    })
  ).outboxId
  without = (await send({})).outboxId
  owner = (await signedIn(app, { account: seeded.account })).browser
})

describe('the message page’s reply-to, extra headers and attachments', () => {
  it('shows each one, escaped', async () => {
    const page = await owner.get(`/dashboard/outbox/${withFields}`)
    expect(page.status).toBe(200)
    const text = textOf(page.html)
    expect(text).toContain('Reply-To desk@example.com, help@example.com')
    expect(text).toContain(`Extra headers ${HEADER_NAME}: ${LONG_VALUE} X-Ticket: 4411`)
    expect(text).toContain(
      `Attachments ${FILENAME} application/pdf, 1.5 KiB logo image/png, 10 bytes, inline as cid:logo`,
    )
    expect(page.html).toContain(ESCAPED)
    expect(page.html).toContain('X-&lt;b&gt;&quot;&amp;&#39;:')
    expect(page.html).toContain('&lt;img src=x onerror=alert(1)&gt;&amp;&quot;&#39;qqq')
    expect(page.html).not.toContain('<img src=x')
    expect(page.html).not.toContain(HOSTILE)
  })

  it('shows no such section for a message without them', async () => {
    const text = textOf((await owner.get(`/dashboard/outbox/${without}`)).html)
    expect(text).not.toContain('Reply-To')
    expect(text).not.toContain('Extra headers')
    expect(text).not.toContain('Attachments')
  })

  it('another account’s session sees none of them', async () => {
    const { browser: other } = await signedIn(app)
    const page = await other.get(`/dashboard/outbox/${withFields}`)
    expect(page.status).toBe(404)
    expect(page.html).not.toContain('desk@example.com')
    expect(page.html).not.toContain('qqqq')
  })
})
