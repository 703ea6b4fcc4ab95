/**
 * One-click unsubscribe from audience mail (docs/hosted-pages.md):
 * List-Unsubscribe and List-Unsubscribe-Post on every audience batch email, `{{unsubscribe_url}}`
 * in the body (reserved), the signed link whose GET only shows a button and whose POST removes
 * the member, and nothing of the kind on transactional mail.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { listMembers } from '../../src/audiences/audiences.ts'
import { unsubscribeToken } from '../../src/audiences/unsubscribe.ts'
import { TEST_SECRET, useTestApp } from '../support/app.ts'
import { audienceWith, createdBatch, decodeMessage, waitForBatchEnd } from '../support/batches.ts'
import { type Sender, startSender } from '../support/sending.ts'

const PUBLIC = 'https://mail.example.test'
const app = useTestApp({ publicUrl: PUBLIC })
let s: Sender
let audienceId: number

beforeAll(async () => {
  s = await startSender(app, 'unsub', { plan: 'pro' })
  await app.worker()
  audienceId = await audienceWith(app, s.key, [
    { email: 'ann@example.com', payload: { name: 'Ann' } },
    // A payload cannot override the reserved placeholder.
    { email: 'bob@example.com', payload: { name: 'Bob', unsubscribe_url: 'https://evil.example/x' } },
  ])
})

function suppressionOf(email: string) {
  return app.request(`/suppressions/${encodeURIComponent(email)}`, { key: s.key })
}

async function memberEmails() {
  return (
    await listMembers(app.services.sql, s.accountId, audienceId, { limit: 100, offset: 0 })
  ).members.map((m) => m.email)
}

describe('audience batch mail', () => {
  let links: Map<string, string>

  it('carries List-Unsubscribe with an HTTPS link and List-Unsubscribe-Post, and the same link in the body', async () => {
    const batchId = await createdBatch(app, s.key, {
      audience_id: audienceId,
      template: {
        subject: 'News for {{name}}',
        html_body: '<a href="{{unsubscribe_url}}">out</a>',
        text_body: 'Out: {{unsubscribe_url}}',
      },
    })
    await waitForBatchEnd(app, s.key, batchId)
    const mails = await s.sink.waitForMessages(2, 15_000)
    links = new Map()
    for (const mail of mails) {
      const to = mail.envelope.to[0] as string
      const header = mail.headers.get('list-unsubscribe') ?? ''
      const match =
        /^<(https:\/\/mail\.example\.test\/unsubscribe\/[0-9]+\.[0-9]+\.[A-Za-z0-9_-]{43})>$/.exec(header)
      expect(match, header).not.toBeNull()
      const url = match?.[1] as string
      expect(mail.headers.get('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click')
      const decoded = decodeMessage(mail.raw)
      expect(decoded.text).toContain(`Out: ${url}`)
      expect(decoded.html).toContain(`href="${url.replaceAll('&', '&amp;')}"`)
      expect(decoded.text).not.toContain('evil.example')
      links.set(to, url)
    }
    expect(new Set(links.values()).size).toBe(2)
  })

  it('shows a button on GET and unsubscribes nobody; the POST removes the member, and again is harmless', async () => {
    const path = new URL(links.get('ann@example.com') as string).pathname
    const shown = await app.requestRoot(path)
    expect(shown.status).toBe(200)
    const html = await shown.text()
    expect(html).toContain('<form method="post">')
    expect(html).not.toContain('<script')
    expect(await memberEmails()).toEqual(['ann@example.com', 'bob@example.com'])
    // The mail client's one-click request (RFC 8058).
    const oneClick = { method: 'POST', body: new URLSearchParams({ 'List-Unsubscribe': 'One-Click' }) }
    expect((await suppressionOf('ann@example.com')).status).toBe(404)
    expect((await app.requestRoot(path, oneClick)).status).toBe(200)
    expect(await memberEmails()).toEqual(['bob@example.com'])
    expect((await app.requestRoot(path, oneClick)).status).toBe(200)
    expect(await memberEmails()).toEqual(['bob@example.com'])
    // Suppressed for marketing besides, so that no other audience's batch reaches the address.
    expect((await (await suppressionOf('ann@example.com')).json()).suppression).toEqual({
      email: 'ann@example.com',
      reason: 'unsubscribe',
      scope: 'marketing',
      detail: null,
      source: { type: 'page', id: audienceId },
      created_at: expect.any(String),
    })
  })

  it('refuses forged and altered links with 404, removing no one', async () => {
    const url = links.get('bob@example.com') as string
    const [audience, member, signature] = url.slice(url.lastIndexOf('/') + 1).split('.') as [
      string,
      string,
      string,
    ]
    const otherMember = `${audience}.${Number(member) + 1}.${signature}`
    const wrongSecret = unsubscribeToken(`${TEST_SECRET}-not`, {
      audienceId: Number(audience),
      memberId: Number(member),
    })
    for (const token of [otherMember, wrongSecret, 'x', `${audience}.${member}.${'A'.repeat(43)}`]) {
      expect((await app.requestRoot(`/unsubscribe/${token}`, { method: 'POST' })).status).toBe(404)
      expect((await app.requestRoot(`/unsubscribe/${token}`)).status).toBe(404)
    }
    expect(await memberEmails()).toEqual(['bob@example.com'])
    expect((await suppressionOf('bob@example.com')).status).toBe(404)
  })
})

describe('transactional mail', () => {
  it('carries no unsubscribe header on /send, /enqueue, recipients and emails batches; the placeholder is empty', async () => {
    const before = s.sink.messages.length
    expect(
      (
        await app.request('/send', {
          method: 'POST',
          key: s.key,
          body: { to: 'a@example.com', subject: 'x', text_body: 'x' },
        })
      ).status,
    ).toBe(200)
    expect(
      (
        await app.request('/enqueue', {
          method: 'POST',
          key: s.key,
          body: { to: 'b@example.com', subject: 'x', text_body: 'x' },
        })
      ).status,
    ).toBe(200)
    const recipients = await createdBatch(app, s.key, {
      recipients: ['c@example.com'],
      template: { subject: 'x', text_body: 'Out: [{{unsubscribe_url}}]' },
    })
    const emails = await createdBatch(app, s.key, {
      emails: [{ to: 'd@example.com', subject: 'x', text_body: 'Out: [{{unsubscribe_url}}]' }],
    })
    await waitForBatchEnd(app, s.key, recipients)
    await waitForBatchEnd(app, s.key, emails)
    const mails = (await s.sink.waitForMessages(before + 4, 15_000)).slice(before)
    expect(mails).toHaveLength(4)
    for (const mail of mails) {
      expect(mail.headers.has('list-unsubscribe')).toBe(false)
      expect(mail.headers.has('list-unsubscribe-post')).toBe(false)
    }
    const batchTexts = mails.filter((m) =>
      ['c@example.com', 'd@example.com'].includes(m.envelope.to[0] as string),
    )
    for (const mail of batchTexts) expect(decodeMessage(mail.raw).text).toContain('Out: []')
  })
})
