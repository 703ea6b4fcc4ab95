/**
 * Placeholders end to end (docs/decisions.md, "Placeholders"): what
 * members of an audience actually receive through a real TLS SMTP sink, decoded from whatever
 * transfer encoding nodemailer chose, and what `recipients` and `emails` batches receive.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { beforeAll, describe, expect, it } from 'vitest'
import { pauseConnection, resumeConnection } from '../../src/connections/connections.ts'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import { useTestApp } from '../support/app.ts'
import {
  answerOf,
  audienceWith,
  batchOf,
  createdBatch,
  type DecodedMessage,
  decodeMessage,
  templateWith,
  waitForBatchEnd,
} from '../support/batches.ts'
import { type Sender, startSender } from '../support/sending.ts'
import type { ReceivedMessage } from '../support/smtp-sink.ts'

const app = useTestApp()

beforeAll(async () => {
  await app.worker({ retry: retryPolicy(50, 3, 50) })
})

const template = {
  subject: 'Hi {{ first_name }}|{{missing}}|{{N}}|{{n}}|{{multi}}',
  text_body: 'Text {{first_name}}|{{ n }}|{{html}}|{{flag}}|{{obj}}|{{missing}}|{{  N  }}|{{First_Name}}',
  html_body: '<p>Html {{first_name}}|{{n}}|{{html}}|{{missing}}|{{N}}</p>',
}

const members = [
  {
    email: 'ada@example.com',
    payload: {
      first_name: 'Ada',
      n: 42,
      html: `<b>&"'`,
      multi: 'a\r\nBcc: x@evil.example',
      flag: true,
      obj: { a: 1 },
    },
  },
  // Names are case-sensitive: this member has `N`, not `n`.
  { email: 'grace@example.com', payload: { first_name: 'Grace', N: 'big' } },
  // No payload at all: every placeholder is empty.
  { email: 'nobody@example.com' },
]

/** What each member must receive, decoded. */
const expected: Record<string, { subject: string; text: string; html: string }> = {
  'ada@example.com': {
    subject: 'Hi Ada|||42|aBcc: x@evil.example',
    text: `Text Ada|42|<b>&"'|true|{"a":1}|||`,
    html: '<p>Html Ada|42|&lt;b&gt;&amp;&quot;&#39;||</p>',
  },
  'grace@example.com': {
    subject: 'Hi Grace||big||',
    text: 'Text Grace||||||big|',
    html: '<p>Html Grace||||big</p>',
  },
  'nobody@example.com': {
    subject: 'Hi ||||',
    text: 'Text |||||||',
    html: '<p>Html ||||</p>',
  },
}

/** Line endings as sent over SMTP do not matter here; trailing line breaks neither. */
function normalise(text: string | undefined): string | undefined {
  return text?.replace(/\r\n/g, '\n').replace(/\n+$/, '')
}

function contentOf(message: ReceivedMessage): { subject: string; text?: string; html?: string } {
  const decoded: DecodedMessage = decodeMessage(message.raw)
  return { subject: decoded.subject, text: normalise(decoded.text), html: normalise(decoded.html) }
}

function byRecipient(messages: ReceivedMessage[]): Map<string, ReceivedMessage> {
  return new Map(messages.map((m) => [m.envelope.to.join(','), m]))
}

/** Checks what an audience batch of `members` delivered. */
function expectAudienceMessages(messages: ReceivedMessage[]): void {
  expect(messages).toHaveLength(3)
  const received = byRecipient(messages)
  expect([...received.keys()].sort()).toEqual(Object.keys(expected).sort())
  for (const [address, want] of Object.entries(expected)) {
    const message = received.get(address) as ReceivedMessage
    expect(contentOf(message), address).toEqual(want)
    // The line break never reached the header block: no injected Bcc, one Subject.
    const names = decodeMessage(message.raw).headerNames
    expect(names).not.toContain('bcc')
    expect(names.filter((n) => n === 'subject')).toHaveLength(1)
    expect(message.headers.has('bcc')).toBe(false)
    expect(message.envelope.to).toEqual([address])
  }
}

async function freshSender(label: string): Promise<Sender> {
  return startSender(app, label, { plan: 'pro' })
}

describe('placeholders filled from audience payloads', () => {
  it('template_id: case-sensitive names, spaces ignored, missing empty, non-strings as JSON, html escaped, text as is, CR/LF out of the subject', async () => {
    const s = await freshSender('ph-saved')
    const audienceId = await audienceWith(app, s.key, members)
    const templateId = await templateWith(app, s.key, template)
    const id = await createdBatch(app, s.key, { template_id: templateId, audience_id: audienceId })
    expect(await waitForBatchEnd(app, s.key, id)).toMatchObject({ status: 'completed', sent_count: 3 })
    expectAudienceMessages(await s.sink.waitForMessages(3))
    // Nothing went to the address the payload tried to inject.
    await sleep(200)
    expect(s.sink.messages.flatMap((m) => m.envelope.to)).not.toContain('x@evil.example')
  })

  it('inline template: the same rendering', async () => {
    const s = await freshSender('ph-inline')
    const audienceId = await audienceWith(app, s.key, members)
    const id = await createdBatch(app, s.key, { template, audience_id: audienceId })
    expect(await waitForBatchEnd(app, s.key, id)).toMatchObject({ status: 'completed', sent_count: 3 })
    expectAudienceMessages(await s.sink.waitForMessages(3))
  })

  it('non-ASCII values arrive intact whatever the transfer encoding', async () => {
    const s = await freshSender('ph-utf8')
    const audienceId = await audienceWith(app, s.key, [
      { email: 'zoe@example.com', payload: { first_name: 'Zoë 😀', city: 'Kraków <Old Town>' } },
    ])
    const long = 'x'.repeat(200)
    const id = await createdBatch(app, s.key, {
      template: {
        subject: 'Cześć {{first_name}}',
        text_body: `Hallo {{first_name}} aus {{city}} ${long}`,
        html_body: `<p>{{first_name}} {{city}}</p>${long}`,
      },
      audience_id: audienceId,
    })
    await waitForBatchEnd(app, s.key, id)
    const [message] = await s.sink.waitForMessages(1)
    expect(contentOf(message as ReceivedMessage)).toEqual({
      subject: 'Cześć Zoë 😀',
      text: `Hallo Zoë 😀 aus Kraków <Old Town> ${long}`,
      html: `<p>Zoë 😀 Kraków &lt;Old Town&gt;</p>${long}`,
    })
  })

  it('deleting the template after creating the batch does not change what is sent', async () => {
    const s = await freshSender('ph-deleted')
    const audienceId = await audienceWith(app, s.key, members)
    const templateId = await templateWith(app, s.key, template)
    // Held back while the template changes: a paused connection accepts the batch and waits.
    await pauseConnection(app.services.sql, s.connectionId)
    const id = await createdBatch(app, s.key, { template_id: templateId, audience_id: audienceId })
    const removed = await answerOf(
      await app.request(`/templates/${templateId}`, { method: 'DELETE', key: s.key }),
    )
    expect(removed.status).toBe(200)
    await sleep(300)
    expect(s.sink.messages).toHaveLength(0)
    expect((await batchOf(app, s.key, id)).status).toBe('pending')
    await resumeConnection(app.services.sql, s.connectionId)
    expect(await waitForBatchEnd(app, s.key, id)).toMatchObject({ status: 'completed', sent_count: 3 })
    expectAudienceMessages(await s.sink.waitForMessages(3))
  })

  it('changing the audience after creating the batch does not change what is sent', async () => {
    const s = await freshSender('ph-changed')
    const audienceId = await audienceWith(app, s.key, members)
    await pauseConnection(app.services.sql, s.connectionId)
    const id = await createdBatch(app, s.key, { template, audience_id: audienceId })
    const added = await answerOf(
      await app.request(`/audiences/${audienceId}/members`, {
        method: 'POST',
        key: s.key,
        body: { members: [{ email: 'late@example.com', payload: { first_name: 'Late' } }] },
      }),
    )
    expect(added.status).toBe(201)
    await resumeConnection(app.services.sql, s.connectionId)
    expect(await waitForBatchEnd(app, s.key, id)).toMatchObject({
      status: 'completed',
      sent_count: 3,
      total_count: 3,
    })
    expectAudienceMessages(await s.sink.waitForMessages(3))
  })
})

describe('line breaks never start a header', () => {
  it('CR/LF in an `emails` item subject and in an inline template subject: no injected header, one recipient', async () => {
    const s = await freshSender('ph-crlf')
    const first = await createdBatch(app, s.key, {
      emails: [{ to: 'i1@example.com', subject: 'Hello\r\nBcc: evil@example.com', text_body: 'x' }],
    })
    const second = await createdBatch(app, s.key, {
      template: { subject: 'Hi\nBcc: evil@example.com {{x}}', text_body: 'y' },
      recipients: ['i2@example.com'],
    })
    await waitForBatchEnd(app, s.key, first)
    await waitForBatchEnd(app, s.key, second)
    const messages = await s.sink.waitForMessages(2)
    await sleep(200)
    expect(s.sink.messages).toHaveLength(2)
    for (const message of messages) {
      const decoded = decodeMessage(message.raw)
      expect(decoded.headerNames).not.toContain('bcc')
      expect(decoded.subject).not.toMatch(/[\r\n]/)
      expect(decoded.subject).toContain('Bcc: evil@example.com')
      expect(message.envelope.to).toHaveLength(1)
    }
  })
})

describe('placeholders in batches without an audience render empty', () => {
  it('recipients: every placeholder empty, in every field', async () => {
    const s = await freshSender('ph-recipients')
    const id = await createdBatch(app, s.key, { template, recipients: ['r1@example.com', 'r2@example.com'] })
    expect(await waitForBatchEnd(app, s.key, id)).toMatchObject({ status: 'completed', sent_count: 2 })
    const messages = await s.sink.waitForMessages(2)
    for (const message of messages) expect(contentOf(message)).toEqual(expected['nobody@example.com'])
  })

  it('emails: every placeholder empty; literal text and HTML of the item kept', async () => {
    const s = await freshSender('ph-emails')
    const id = await createdBatch(app, s.key, {
      emails: [
        {
          to: 'e1@example.com',
          subject: 'One {{first_name}}!',
          text_body: 'Dear {{ first_name }}, <b>& {x}',
        },
        { to: 'e2@example.com', subject: 'Two {{n}}', html_body: '<p>{{html}}&amp;</p>' },
      ],
    })
    expect(await waitForBatchEnd(app, s.key, id)).toMatchObject({ status: 'completed', sent_count: 2 })
    const received = byRecipient(await s.sink.waitForMessages(2))
    expect(contentOf(received.get('e1@example.com') as ReceivedMessage)).toEqual({
      subject: 'One !',
      text: 'Dear , <b>& {x}',
      html: undefined,
    })
    expect(contentOf(received.get('e2@example.com') as ReceivedMessage)).toEqual({
      subject: 'Two ',
      text: undefined,
      html: '<p>&amp;</p>',
    })
  })
})
