/**
 * The two accounts of the isolation walk: each with one of everything, made as its owner would
 * (through the API, the domain code and a signed-in browser).
 */
import { expect } from 'vitest'
import { createAccountWithPassword } from '../../../src/accounts/passwords.ts'
import { startSession } from '../../../src/accounts/sessions.ts'
import { unsubscribeToken } from '../../../src/audiences/unsubscribe.ts'
import { addConnection } from '../../../src/connections/connections.ts'
import { createForm } from '../../../src/forms/forms.ts'
import { createKey } from '../../../src/keys/keys.ts'
import { enableSignupPage, setSignupPage } from '../../../src/signups/signup-pages.ts'
import type { TestApp } from '../../support/app.ts'
import { audienceWith, createdBatch } from '../../support/batches.ts'
import { type Client, client } from '../../support/dashboard.ts'
import { json } from '../../support/dashboard-pages.ts'
import { startSink } from '../../support/sending.ts'

/** Every name, address and text of the owner's data carries this, so a leak shows anywhere. */
export const MARK = 'vctm'
export const PASSWORD = 'correct horse battery staple'

/** An account with one of everything, made as its owner would. */
export interface Tenant {
  label: string
  accountId: number
  email: string
  key: string
  keyId: number
  browser: Client
  connectionId: number
  from: string
  idempotencyKey: string
  outboxId: number
  audienceId: number
  /** A second audience, whose sign-up page is disabled. */
  closedAudienceId: number
  memberId: number
  spareMemberId: number
  memberEmails: string[]
  templateId: number
  spareTemplateId: number
  batchId: number
  spareBatchId: number
  /** Emails and batches scheduled for later, which can still be moved and canceled: one for the API, one for the dashboard. */
  scheduledId: number
  spareScheduledId: number
  scheduledBatchId: number
  spareScheduledBatchId: number
  formId: number
  formPublicId: string
  webhookId: number
  spareWebhookId: number
  /** A delivery to `webhookId`: of the email.sent event of the tenant's /send. */
  deliveryId: number
  slug: string
  closedSlug: string
  unsubscribeToken: string
  /** Addresses on the account's suppression list: one to read, one to remove by the API, one on the dashboard. */
  suppressedEmail: string
  spareSuppressedEmail: string
  pageSuppressedEmail: string
}

/** Three suppressed addresses, added as the owner would. */
async function suppressions(app: TestApp, label: string, key: string) {
  const suppressedEmail = `${label}-suppressed@example.com`
  const spareSuppressedEmail = `${label}-spare-suppressed@example.com`
  const pageSuppressedEmail = `${label}-page-suppressed@example.com`
  const added = await app.request('/suppressions', {
    key,
    body: { emails: [suppressedEmail, spareSuppressedEmail, pageSuppressedEmail] },
  })
  expect(added.status).toBe(201)
  return { suppressedEmail, spareSuppressedEmail, pageSuppressedEmail }
}

/** The account, its connection and key, and a browser signed in as its owner. */
async function owner(app: TestApp, label: string) {
  const { sql } = app.services
  const account = await createAccountWithPassword(sql, {
    email: `${label}-owner@example.com`,
    plan: 'pro',
    password: PASSWORD,
  })
  const sink = await startSink(app)
  const from = `${label}-sender@example.com`
  const connection = await addConnection(app.services, {
    accountId: account.id,
    ...sink.login,
    from,
    rate: 6000,
  })
  const { key, id: keyId } = await createKey(sql, { accountId: account.id, name: `${label} key` })
  const { token } = await startSession(sql, account.id)
  const browser = client(app)
  browser.cookies.set('mailroom_session', token)
  expect((await browser.get('/dashboard')).status).toBe(200)
  return { account, connection, from, key, keyId, browser }
}

/** Two webhook endpoints, and a /send whose email.sent event made a delivery to the first. */
async function webhooksAndSend(app: TestApp, label: string, key: string) {
  const { sql } = app.services
  const webhook = async (n: number) =>
    (
      (
        await json(
          await app.request('/webhooks', {
            key,
            body: {
              url: `http://127.0.0.1:9/${label}-${n}`,
              events: ['email.sent'],
              description: `${label} hook`,
            },
          }),
        )
      ).webhook as { id: number }
    ).id
  const webhookId = await webhook(1)
  const spareWebhookId = await webhook(2)
  const idempotencyKey = `${label}-idempotency`
  const sent = await json(
    await app.request('/send', {
      key,
      headers: { 'Idempotency-Key': idempotencyKey },
      body: { to: `${label}-to@example.com`, subject: `${label} subject`, text_body: `${label} body` },
    }),
  )
  const [delivery] = await sql<{ id: number }[]>`
    select id from webhook_deliveries where endpoint_id = ${webhookId} order by id limit 1`
  if (!delivery) throw new Error(`${label}: the sent email made no webhook delivery`)
  return {
    webhookId,
    spareWebhookId,
    idempotencyKey,
    outboxId: sent.outboxId as number,
    deliveryId: delivery.id,
  }
}

/** An audience of two members with a live sign-up page, and one whose page is disabled. */
async function audiences(app: TestApp, label: string, key: string, accountId: number) {
  const { sql, config } = app.services
  const memberEmails = [1, 2].map((n) => `${label}-member${n}@example.com`)
  const audienceId = await audienceWith(
    app,
    key,
    memberEmails.map((email) => ({ email, payload: { name: `${label} name` } })),
    `${label} audience`,
  )
  const members = await json(await app.request(`/audiences/${audienceId}/members`, { key }))
  const [memberId, spareMemberId] = (members.members as { id: number }[]).map((m) => m.id)
  const closedAudienceId = await audienceWith(
    app,
    key,
    [{ email: `${label}-closed@example.com` }],
    `${label} closed`,
  )
  const slug = `${label}-page`
  const closedSlug = `${label}-closed`
  await setSignupPage(sql, accountId, audienceId, { slug, title: 'Join our list' }, config.publicUrl)
  await setSignupPage(sql, accountId, closedAudienceId, { slug: closedSlug }, config.publicUrl)
  await enableSignupPage(sql, accountId, closedAudienceId, false, config.publicUrl)
  return {
    audienceId,
    closedAudienceId,
    memberId: memberId as number,
    spareMemberId: spareMemberId as number,
    memberEmails,
    slug,
    closedSlug,
    unsubscribeToken: unsubscribeToken(app.services.secret, { audienceId, memberId: memberId as number }),
  }
}

/** Two templates and two batches. */
async function templatesAndBatches(app: TestApp, label: string, key: string) {
  const template = async (n: number) =>
    (
      (
        await json(
          await app.request('/templates', {
            key,
            body: {
              name: `${label} template ${n}`,
              subject: `${label} subject ${n}`,
              text_body: `${label} text`,
            },
          }),
        )
      ).template as { id: number }
    ).id
  const batch = () =>
    createdBatch(app, key, {
      name: `${label} batch`,
      recipients: [`${label}-recipient@example.com`],
      template: { subject: `${label} batch subject`, text_body: `${label} batch text` },
    })
  return {
    templateId: await template(1),
    spareTemplateId: await template(2),
    batchId: await batch(),
    spareBatchId: await batch(),
  }
}

/** Two emails and two batches scheduled a day ahead. */
async function scheduled(app: TestApp, label: string, key: string) {
  const at = new Date(Date.now() + 24 * 3_600_000).toISOString()
  const email = async (n: number) =>
    (
      await json(
        await app.request('/enqueue', {
          key,
          body: {
            to: `${label}-later${n}@example.com`,
            subject: `${label} later`,
            text_body: 'x',
            scheduled_at: at,
          },
        }),
      )
    ).outboxId as number
  const batch = () =>
    createdBatch(app, key, {
      name: `${label} scheduled batch`,
      recipients: [`${label}-later@example.com`],
      template: { subject: `${label} later`, text_body: 'x' },
      scheduled_at: at,
    })
  return {
    scheduledId: await email(1),
    spareScheduledId: await email(2),
    scheduledBatchId: await batch(),
    spareScheduledBatchId: await batch(),
  }
}

export async function tenant(app: TestApp, label: string): Promise<Tenant> {
  const { sql, config } = app.services
  const { account, connection, from, key, keyId, browser } = await owner(app, label)
  const sent = await webhooksAndSend(app, label, key)
  const lists = await audiences(app, label, key, account.id)
  const form = await createForm(
    sql,
    account.id,
    { name: `${label} form`, connectionId: connection.id },
    config.publicUrl,
  )
  return {
    label,
    accountId: account.id,
    email: account.email,
    key,
    keyId,
    browser,
    connectionId: connection.id,
    from,
    ...sent,
    ...lists,
    ...(await templatesAndBatches(app, label, key)),
    ...(await scheduled(app, label, key)),
    ...(await suppressions(app, label, key)),
    formId: form.id,
    formPublicId: form.public_id,
  }
}
