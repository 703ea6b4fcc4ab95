/**
 * One account can neither read nor change another's data, through any API
 * operation, dashboard page or action, or hosted page.
 *
 * The walk is driven by the contract and the route tables, not by a list kept by hand: every
 * operation of openapi/openapi.yaml and every route of the dashboard and of the hosted pages
 * (`app.routes`) must have an entry in the tables below, or the first test fails naming it
 * ("not walked: GET /emails/{id}"). An entry says how to build the request from the other
 * account's IDs (`them`) and the caller's own (`me`), and what the contract answers:
 * - the API: 403 `{error: "Access denied"}` for another's audience or template, 404
 *   `BATCH_NOT_FOUND` for another's batch, the connection errors for another's sending address
 *   (the specification's authentication rules);
 * - the dashboard: 404 for another account's ID (docs/dashboard.md);
 * - hosted pages (public): 404 for anything that is not a live public address.
 * Each request is then made by the owner itself (the control): it must succeed, so an entry
 * cannot pass by missing its route. Before the controls, the owner's rows (every table, found
 * through the schema's foreign keys) must be exactly as before the walk, and no row of the
 * caller may point at one of the owner's.
 */

import { readFileSync } from 'node:fs'
import { beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { createAccountWithPassword } from '../../src/accounts/passwords.ts'
import { startSession } from '../../src/accounts/sessions.ts'
import { unsubscribeToken } from '../../src/audiences/unsubscribe.ts'
import { addConnection } from '../../src/connections/connections.ts'
import { createDashboard } from '../../src/dashboard/app.ts'
import { createForm } from '../../src/forms/forms.ts'
import { createHosted } from '../../src/hosted/app.ts'
import { createKey } from '../../src/keys/keys.ts'
import { enableSignupPage, setSignupPage } from '../../src/signups/signup-pages.ts'
import { type RequestInit, useTestApp } from '../support/app.ts'
import { audienceWith, createdBatch, waitForBatchEnd } from '../support/batches.ts'
import { type Client, client, textOf } from '../support/dashboard.ts'
import { crossLinks, type Ownership, ownershipOf, rowsOf } from '../support/ownership.ts'
import { startSink } from '../support/sending.ts'

const app = useTestApp()

/** Every name, address and text of the owner's data carries this, so a leak shows anywhere. */
const MARK = 'vctm'
const PASSWORD = 'correct horse battery staple'

/** An account with one of everything, made as its owner would. */
interface Tenant {
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
  formId: number
  formPublicId: string
  webhookId: number
  spareWebhookId: number
  /** A delivery to `webhookId`: of the email.sent event of the tenant's /send. */
  deliveryId: number
  slug: string
  closedSlug: string
  unsubscribeToken: string
}

async function json(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>
}

async function tenant(label: string): Promise<Tenant> {
  const { sql, config } = app.services
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
  const form = await createForm(
    sql,
    account.id,
    { name: `${label} form`, connectionId: connection.id },
    config.publicUrl,
  )
  const slug = `${label}-page`
  const closedSlug = `${label}-closed`
  await setSignupPage(sql, account.id, audienceId, { slug, title: 'Join our list' }, config.publicUrl)
  await setSignupPage(sql, account.id, closedAudienceId, { slug: closedSlug }, config.publicUrl)
  await enableSignupPage(sql, account.id, closedAudienceId, false, config.publicUrl)
  return {
    label,
    accountId: account.id,
    email: account.email,
    key,
    keyId,
    browser,
    connectionId: connection.id,
    from,
    idempotencyKey,
    outboxId: sent.outboxId as number,
    audienceId,
    closedAudienceId,
    memberId: memberId as number,
    spareMemberId: spareMemberId as number,
    memberEmails,
    templateId: await template(1),
    spareTemplateId: await template(2),
    batchId: await batch(),
    spareBatchId: await batch(),
    formId: form.id,
    formPublicId: form.public_id,
    webhookId,
    spareWebhookId,
    deliveryId: delivery.id,
    slug,
    closedSlug,
    unsubscribeToken: unsubscribeToken(app.services.secret, { audienceId, memberId: memberId as number }),
  }
}

// --- What an entry says -------------------------------------------------------------------------

type Params = Record<string, string | number>
type Build<T> = (them: Tenant, me: Tenant) => T

/** What the caller must be answered: a status, and the exact JSON body or a sentence of the page. */
interface Answer {
  status: number
  body?: unknown
  text?: string
}

interface Probe {
  /** Path parameters, by name (`{id}` in the contract, `:id` in a route table). */
  params?: Build<Params>
  query?: Build<Params>
  /** JSON for the API, form fields for pages. */
  body?: Build<unknown>
  headers?: Build<Record<string, string>>
  /** The answer the caller gets; OWN for an operation on its own data (it succeeds). */
  answer: Answer | typeof OWN
  /** Order of the walk and of the controls: destructive requests come last. */
  phase?: number
  /**
   * The contrast the entry is proved against, made by the owner: by default the same request
   * with every ID its own. Hosted pages name theirs (a live address); false where another
   * entry's control already covers the route.
   */
  control?: false | ((owner: Tenant) => { params?: Params; body?: unknown })
  /** A dashboard request made by a browser without a session (it has read the sign-in page). */
  signedOut?: boolean
}

const OWN = 'own' as const
/** Members removed, pages disabled: after the pages that show them. */
const LATE = 1
const DELETES = 2
const ACCOUNT_WIDE = 3

function probe(
  answer: Probe['answer'],
  params?: Build<Params>,
  more: Omit<Probe, 'answer' | 'params'> = {},
): Probe {
  return { answer, ...(params ? { params } : {}), ...more }
}

const standard = (status: number, code: string): Answer => ({
  status,
  body: { code, message: expect.any(String) },
})
const simple = (status: number, error: string): Answer => ({ status, body: { error } })

const ACCESS_DENIED = simple(403, 'Access denied')
const BATCH_NOT_FOUND = standard(404, 'BATCH_NOT_FOUND')
const CONNECTION_NOT_FOUND = standard(403, 'CONNECTION_NOT_FOUND')
const WEBHOOK_NOT_FOUND = standard(404, 'WEBHOOK_NOT_FOUND')
const NOT_ON_YOUR_ACCOUNT: Answer = { status: 404, text: 'There is nothing at this address on your account.' }
const NOT_PUBLIC: Answer = { status: 404, text: 'Not found' }

const email = (me: Tenant, extra: Record<string, unknown> = {}) => ({
  to: `${me.label}-to@example.com`,
  subject: `${me.label} probe`,
  text_body: 'probe',
  ...extra,
})
const inlineTemplate = { subject: 'probe', text_body: 'probe' }

// --- The API: every operation of openapi/openapi.yaml ---------------------------------------------

const API: Record<string, Probe[]> = {
  'POST /send': [
    probe(CONNECTION_NOT_FOUND, undefined, { body: (t, me) => email(me, { from: t.from }) }),
    // The other account's Idempotency-Key replays nothing of theirs: a fresh send of the caller's own.
    probe(
      {
        status: 200,
        body: expect.objectContaining({ success: true, from: expect.not.stringContaining(MARK) }),
      },
      undefined,
      { body: (_t, me) => email(me), headers: (t) => ({ 'Idempotency-Key': t.idempotencyKey }) },
    ),
  ],
  'POST /enqueue': [probe(CONNECTION_NOT_FOUND, undefined, { body: (t, me) => email(me, { from: t.from }) })],
  'POST /send/batch': [
    probe(CONNECTION_NOT_FOUND, undefined, {
      body: (t, me) => ({
        from: t.from,
        recipients: [`${me.label}-r@example.com`],
        template: inlineTemplate,
      }),
    }),
    probe(standard(404, 'RESOURCE_NOT_FOUND'), undefined, {
      body: (t, me) => ({ template_id: t.templateId, recipients: [`${me.label}-r@example.com`] }),
    }),
    probe(simple(400, 'Invalid audience'), undefined, {
      body: (t) => ({ audience_id: t.audienceId, template: inlineTemplate }),
    }),
  ],
  'GET /batches/{id}': [probe(BATCH_NOT_FOUND, (t) => ({ id: t.batchId }))],
  'DELETE /batches/{id}': [probe(BATCH_NOT_FOUND, (t) => ({ id: t.spareBatchId }), { phase: DELETES })],
  'GET /audiences': [probe(OWN)],
  'POST /audiences': [probe({ status: 201 }, undefined, { body: (_t, me) => ({ name: `${me.label} new` }) })],
  'GET /audiences/{id}': [probe(ACCESS_DENIED, (t) => ({ id: t.audienceId }))],
  'PUT /audiences/{id}': [
    probe(ACCESS_DENIED, (t) => ({ id: t.audienceId }), { body: () => ({ name: 'taken' }) }),
  ],
  'DELETE /audiences/{id}': [probe(ACCESS_DENIED, (t) => ({ id: t.closedAudienceId }), { phase: DELETES })],
  'GET /audiences/{id}/members': [probe(ACCESS_DENIED, (t) => ({ id: t.audienceId }))],
  'POST /audiences/{id}/members': [
    probe(ACCESS_DENIED, (t) => ({ id: t.audienceId }), {
      body: (_t, me) => ({ members: [{ email: `${me.label}-planted@example.com` }] }),
    }),
  ],
  'DELETE /audiences/{id}/members/{memberId}': [
    probe(ACCESS_DENIED, (t) => ({ id: t.audienceId, memberId: t.spareMemberId }), { phase: LATE }),
    // The caller's own audience with the other's member: not a member of that audience.
    probe(simple(404, 'Member not found'), (t, me) => ({ id: me.audienceId, memberId: t.spareMemberId }), {
      phase: LATE,
      control: false,
    }),
  ],
  'GET /templates': [probe(OWN)],
  'POST /templates': [
    probe({ status: 201 }, undefined, {
      body: (_t, me) => ({ name: `${me.label} new`, subject: 's', text_body: 't' }),
    }),
  ],
  'GET /templates/{id}': [probe(ACCESS_DENIED, (t) => ({ id: t.templateId }))],
  'PUT /templates/{id}': [
    probe(ACCESS_DENIED, (t) => ({ id: t.templateId }), { body: () => ({ name: 'taken' }) }),
  ],
  'DELETE /templates/{id}': [probe(ACCESS_DENIED, (t) => ({ id: t.spareTemplateId }), { phase: DELETES })],
  'GET /emails': [
    probe(OWN),
    // Filtered by the other's batch: it matches nothing, as in the dashboard.
    probe({ status: 200, body: expect.objectContaining({ emails: [] }) }, undefined, {
      query: (t) => ({ batch_id: t.batchId }),
      control: false,
    }),
  ],
  'GET /emails/{id}': [probe(standard(404, 'OUTBOX_RECORD_NOT_FOUND'), (t) => ({ id: t.outboxId }))],
  'GET /webhooks': [probe(OWN)],
  'POST /webhooks': [
    probe({ status: 201 }, undefined, {
      body: (_t, me) => ({ url: `http://127.0.0.1:9/${me.label}-new`, events: ['email.failed'] }),
    }),
  ],
  'GET /webhooks/{id}': [probe(WEBHOOK_NOT_FOUND, (t) => ({ id: t.webhookId }))],
  'PUT /webhooks/{id}': [
    probe(WEBHOOK_NOT_FOUND, (t) => ({ id: t.webhookId }), { body: () => ({ description: 'taken' }) }),
  ],
  'DELETE /webhooks/{id}': [probe(WEBHOOK_NOT_FOUND, (t) => ({ id: t.spareWebhookId }), { phase: DELETES })],
  'POST /webhooks/{id}/rotate-secret': [probe(WEBHOOK_NOT_FOUND, (t) => ({ id: t.webhookId }))],
  'GET /webhooks/{id}/deliveries': [probe(WEBHOOK_NOT_FOUND, (t) => ({ id: t.webhookId }))],
}

// --- The dashboard: every route of its app --------------------------------------------------------

const connectionFields = { quota: '', per: 'day', rate: '600', password: '' }

const DASHBOARD: Record<string, Probe[]> = {
  'GET /dashboard/assets/pico.css': [probe(OWN)],
  'GET /dashboard/assets/dashboard.css': [probe(OWN)],
  'GET /dashboard/assets/dashboard.js': [probe(OWN)],
  'GET /dashboard/login': [probe(OWN)],
  // Signing in as the other account without its password: refused, and their sessions untouched.
  'POST /dashboard/login': [
    probe({ status: 401, text: 'Wrong email or password.' }, undefined, {
      signedOut: true,
      body: (t, me) => ({ email: t.email, password: t === me ? PASSWORD : 'not their password' }),
    }),
  ],
  'POST /dashboard/logout': [probe(OWN, undefined, { phase: ACCOUNT_WIDE + 2 })],
  'GET /dashboard': [probe(OWN)],
  'GET /dashboard/connections': [probe(OWN)],
  'POST /dashboard/connections': [
    probe({ status: 400 }, undefined, { body: () => ({ host: '', port: '2525' }), control: false }),
  ],
  'GET /dashboard/connections/:id': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.connectionId }))],
  'POST /dashboard/connections/:id': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.connectionId }), { body: () => connectionFields }),
  ],
  'POST /dashboard/connections/:id/disable': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.connectionId }))],
  'POST /dashboard/connections/:id/enable': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.connectionId }))],
  'POST /dashboard/connections/:id/pause': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.connectionId }), { body: () => ({ minutes: '5' }) }),
  ],
  'POST /dashboard/connections/:id/resume': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.connectionId }))],
  'GET /dashboard/connections/:id/delete': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.connectionId }))],
  'POST /dashboard/connections/:id/delete': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.connectionId }), { phase: ACCOUNT_WIDE }),
  ],
  'GET /dashboard/keys': [probe(OWN)],
  'POST /dashboard/keys': [
    probe(NOT_ON_YOUR_ACCOUNT, undefined, {
      body: (t) => ({ name: 'scoped', connection: String(t.connectionId) }),
    }),
  ],
  'GET /dashboard/keys/:id/rotate': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.keyId }))],
  'GET /dashboard/keys/:id/revoke': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.keyId }))],
  'POST /dashboard/keys/:id/rotate': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.keyId }), { phase: ACCOUNT_WIDE }),
  ],
  'POST /dashboard/keys/:id/revoke': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.keyId }), { phase: ACCOUNT_WIDE + 1 }),
  ],
  'POST /dashboard/keys/:id/scope': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.keyId }), { body: () => ({ connection: '' }) }),
    // The caller's own key, scoped to the other's connection.
    probe(NOT_ON_YOUR_ACCOUNT, (_t, me) => ({ id: me.keyId }), {
      body: (t) => ({ connection: String(t.connectionId) }),
    }),
  ],
  'GET /dashboard/outbox': [
    probe(OWN),
    probe(OWN, undefined, { query: (t) => ({ connection: t.connectionId, batch: t.batchId, q: MARK }) }),
  ],
  'GET /dashboard/outbox/live': [probe(OWN)],
  'GET /dashboard/outbox/:id': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.outboxId }))],
  'GET /dashboard/batches': [probe(OWN)],
  'GET /dashboard/batches/:id': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.batchId }))],
  'GET /dashboard/batches/:id/live': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.batchId }))],
  'POST /dashboard/batches/:id/retry': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.batchId }))],
  'POST /dashboard/batches/:id/delete': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.batchId }), { phase: DELETES }),
  ],
  'GET /dashboard/audiences': [probe(OWN)],
  'POST /dashboard/audiences': [
    probe(OWN, undefined, { body: (_t, me) => ({ name: `${me.label} page-made` }) }),
  ],
  'GET /dashboard/audiences/:id': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.audienceId }))],
  'POST /dashboard/audiences/:id': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.audienceId }), { body: () => ({ name: 'taken' }) }),
  ],
  'POST /dashboard/audiences/:id/delete': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.audienceId }), { phase: DELETES }),
  ],
  'POST /dashboard/audiences/:id/signup-page': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.audienceId }), {
      body: (t) => ({ slug: t.slug, title: 'taken' }),
    }),
    // The caller's own audience, sending through the other's connection.
    probe(NOT_ON_YOUR_ACCOUNT, (_t, me) => ({ id: me.audienceId }), {
      body: (t, me) => ({ slug: me.slug, connection_id: String(t.connectionId) }),
    }),
    // Nor can it take the other's public address.
    probe({ status: 409 }, (_t, me) => ({ id: me.audienceId }), {
      body: (t) => ({ slug: t.slug }),
      control: false,
    }),
  ],
  'POST /dashboard/audiences/:id/signup-page/enable': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.closedAudienceId })),
  ],
  'POST /dashboard/audiences/:id/signup-page/disable': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.audienceId }), { phase: LATE }),
  ],
  'POST /dashboard/audiences/:id/members': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.audienceId }), {
      body: (_t, me) => ({ lines: `${me.label}-planted@example.com` }),
    }),
  ],
  'POST /dashboard/audiences/:id/members/csv': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.audienceId }), { body: (_t, me) => csvUpload(me) }),
  ],
  'GET /dashboard/audiences/:id/members/:member/delete': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.audienceId, member: t.memberId })),
    probe(NOT_ON_YOUR_ACCOUNT, (t, me) => ({ id: me.audienceId, member: t.memberId }), { control: false }),
  ],
  'POST /dashboard/audiences/:id/members/:member/delete': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.audienceId, member: t.memberId }), { phase: LATE }),
    probe(NOT_ON_YOUR_ACCOUNT, (t, me) => ({ id: me.audienceId, member: t.memberId }), {
      phase: LATE,
      control: false,
    }),
  ],
  'GET /dashboard/templates': [probe(OWN)],
  'POST /dashboard/templates': [
    probe(OWN, undefined, {
      body: (_t, me) => ({ name: `${me.label} page-made`, subject: 's', text_body: 't' }),
    }),
  ],
  'GET /dashboard/templates/:id': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.templateId }))],
  'POST /dashboard/templates/:id': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.templateId }), {
      body: () => ({ name: 'taken', subject: 's', text_body: 't' }),
    }),
  ],
  'POST /dashboard/templates/:id/preview': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.templateId }), {
      body: () => ({ name: 'n', subject: 's', text_body: 't' }),
    }),
  ],
  'POST /dashboard/templates/:id/delete': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.templateId }), { phase: DELETES }),
  ],
  'GET /dashboard/forms': [probe(OWN)],
  'POST /dashboard/forms': [
    probe(NOT_ON_YOUR_ACCOUNT, undefined, {
      body: (t) => ({ name: 'mine', connection_id: String(t.connectionId) }),
    }),
  ],
  'GET /dashboard/forms/:id': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.formId }))],
  'POST /dashboard/forms/:id': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.formId }), {
      body: (t) => ({ name: 'taken', connection_id: String(t.connectionId) }),
    }),
    probe(NOT_ON_YOUR_ACCOUNT, (_t, me) => ({ id: me.formId }), {
      body: (t) => ({ name: 'mine', connection_id: String(t.connectionId) }),
    }),
  ],
  'POST /dashboard/forms/:id/delete': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.formId }), { phase: DELETES }),
  ],
  'GET /dashboard/webhooks': [probe(OWN)],
  'POST /dashboard/webhooks': [
    probe(OWN, undefined, {
      body: (_t, me) => ({ url: `http://127.0.0.1:9/${me.label}-page`, 'event:email.sent': '1' }),
    }),
  ],
  'GET /dashboard/webhooks/:id': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.webhookId }))],
  'POST /dashboard/webhooks/:id': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.webhookId }), {
      body: (t) => ({ url: `http://127.0.0.1:9/${t.label}-taken`, 'event:email.sent': '1', enabled: '1' }),
    }),
  ],
  'GET /dashboard/webhooks/:id/rotate': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.webhookId }))],
  'GET /dashboard/webhooks/:id/delete': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.webhookId }))],
  'POST /dashboard/webhooks/:id/rotate': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.webhookId }))],
  'POST /dashboard/webhooks/:id/delete': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.webhookId }), { phase: DELETES }),
  ],
  'POST /dashboard/webhooks/:id/deliveries/:delivery/again': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.webhookId, delivery: t.deliveryId })),
    // The caller's own endpoint with the other's delivery: not one of that endpoint's.
    probe({ status: 404 }, (t, me) => ({ id: me.webhookId, delivery: t.deliveryId }), { control: false }),
  ],
  'GET /dashboard/account': [probe(OWN)],
  // Changes the caller's own password only; the other's sessions and hash stay as they were.
  'POST /dashboard/account/password': [
    probe(OWN, undefined, {
      phase: ACCOUNT_WIDE,
      body: () => ({
        current_password: PASSWORD,
        new_password: `${PASSWORD} 2`,
        repeat_password: `${PASSWORD} 2`,
      }),
    }),
  ],
}

function csvUpload(me: Tenant): FormData {
  const form = new FormData()
  form.set('file', new Blob([`email\n${me.label}-csv@example.com\n`], { type: 'text/csv' }), 'members.csv')
  return form
}

// --- Hosted pages: public, so the "caller" is anyone ---------------------------------------------

/** The other account's token with one of its parts changed: a link nobody was sent. */
function forged(token: string): string {
  const [audience, member, signature = ''] = token.split('.')
  return `${audience}.${Number(member) + 1}.${signature}`
}

const HOSTED: Record<string, Probe[]> = {
  'GET /hosted/pico.css': [probe(OWN)],
  'GET /signup/:slug': [
    probe(NOT_PUBLIC, (t) => ({ slug: t.closedSlug }), { control: (t) => ({ params: { slug: t.slug } }) }),
  ],
  'POST /signup/:slug': [
    probe(NOT_PUBLIC, (t) => ({ slug: t.closedSlug }), {
      body: () => ({ email: 'stranger@example.com' }),
      control: (t) => ({ params: { slug: t.slug }, body: { email: 'stranger@example.com' } }),
    }),
  ],
  'GET /signup/confirm/:token': [probe(NOT_PUBLIC, () => ({ token: 'a'.repeat(43) }), { control: false })],
  'POST /signup/confirm/:token': [probe(NOT_PUBLIC, () => ({ token: 'a'.repeat(43) }), { control: false })],
  'OPTIONS /forms/:id': [probe(OWN, (t) => ({ id: t.formPublicId }))],
  // The database ID is not the public address.
  'GET /forms/:id': [
    probe(NOT_PUBLIC, (t) => ({ id: t.formId }), { control: (t) => ({ params: { id: t.formPublicId } }) }),
  ],
  'POST /forms/:id': [
    probe(NOT_PUBLIC, (t) => ({ id: t.formId }), {
      body: () => ({ message: 'hello' }),
      control: (t) => ({ params: { id: t.formPublicId }, body: { message: 'hello' } }),
    }),
  ],
  'GET /unsubscribe/:token': [
    probe(NOT_PUBLIC, (t) => ({ token: forged(t.unsubscribeToken) }), {
      control: (t) => ({ params: { token: t.unsubscribeToken } }),
    }),
  ],
  'POST /unsubscribe/:token': [
    probe(NOT_PUBLIC, (t) => ({ token: forged(t.unsubscribeToken) }), {
      phase: LATE,
      control: (t) => ({ params: { token: t.unsubscribeToken } }),
    }),
  ],
}

// --- The walk -------------------------------------------------------------------------------------

type Surface = 'api' | 'dashboard' | 'hosted'

interface Step {
  surface: Surface
  method: string
  template: string
  probe: Probe
}

/** "GET /batches/{id}" for the contract, "POST /dashboard/keys/:id/rotate" for a route table. */
function operationsOfContract(): string[] {
  const document = parse(readFileSync(new URL('../../openapi/openapi.yaml', import.meta.url), 'utf8')) as {
    paths: Record<string, Record<string, unknown>>
  }
  const methods = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options']
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((m) => methods.includes(m))
      .map((m) => `${m.toUpperCase()} ${path}`),
  )
}

/** Routes with a handler of their own (`app.use` middleware is registered as ALL), regexes dropped. */
function operationsOfRoutes(routes: { method: string; path: string }[]): string[] {
  const named = routes
    .filter((r) => r.method !== 'ALL')
    .map((r) => `${r.method} ${r.path.replace(/(:[A-Za-z]+)\{[^}]*\}/g, '$1')}`)
  return [...new Set(named)]
}

/** The route tables, read from apps made on a stand-in (routes are registered without services). */
function routeTables(): { dashboard: string[]; hosted: string[] } {
  const services = app.services
  return {
    dashboard: operationsOfRoutes(createDashboard(services).routes),
    hosted: operationsOfRoutes(createHosted(services).routes),
  }
}

function unwalked(operations: string[], table: Record<string, Probe[]>): string[] {
  return [
    ...operations.filter((op) => !table[op]?.length).map((op) => `not walked: ${op}`),
    ...Object.keys(table)
      .filter((op) => !operations.includes(op))
      .map((op) => `walked but gone: ${op}`),
  ]
}

function stepsOf(surface: Surface, table: Record<string, Probe[]>): Step[] {
  return Object.entries(table).flatMap(([operation, probes]) => {
    const [method = '', template = ''] = operation.split(' ')
    return probes.map((p) => ({ surface, method, template, probe: p }))
  })
}

function fill(template: string, params: Params = {}): string {
  return template.replace(/\{(\w+)\}|:(\w+)/g, (whole, a: string | undefined, b: string | undefined) => {
    const name = a ?? b ?? ''
    if (!(name in params)) throw new Error(`no value for ${whole} in ${template}`)
    return encodeURIComponent(String(params[name]))
  })
}

interface Reply {
  status: number
  text: string
  /** The words of the request that carry MARK: the caller may be told back what it sent. */
  echoes: string[]
}

/** Makes the step's request as `caller` (its key, its session, or nobody for hosted pages). */
async function send(
  step: Step,
  caller: Tenant,
  parts: Pick<Probe, 'params' | 'query' | 'body' | 'headers'>,
  them: Tenant,
  me: Tenant,
): Promise<Reply> {
  const query = parts.query
    ? `?${new URLSearchParams(Object.entries(parts.query(them, me)).map(([k, v]) => [k, String(v)]))}`
    : ''
  const path = fill(step.template, parts.params?.(them, me)) + query
  const body = parts.body?.(them, me)
  const headers = parts.headers?.(them, me) ?? {}
  const sentText = `${path} ${body instanceof FormData ? '' : JSON.stringify(body ?? '')} ${JSON.stringify(headers)}`
  const echoes = sentText.match(new RegExp(`[\\w.@+-]*${MARK}[\\w.@+-]*`, 'g')) ?? []
  if (step.surface === 'dashboard') {
    let browser = caller.browser
    // A page first, as a browser shows the form it posts (and its form token, which a password
    // change renews).
    if (step.probe.signedOut) browser = client(app)
    if (step.method !== 'GET')
      await browser.get(step.probe.signedOut ? '/dashboard/login' : '/dashboard/account')
    const page =
      step.method === 'GET'
        ? await browser.get(path, headers)
        : await browser.post(path, (body ?? {}) as Record<string, string> | FormData, { headers })
    return { status: page.status, text: page.html, echoes }
  }
  const init: RequestInit = { method: step.method, headers, ...(body === undefined ? {} : { body }) }
  if (step.surface === 'api') {
    const res = await app.request(path, { ...init, key: caller.key })
    return { status: res.status, text: await res.text(), echoes }
  }
  const form = body === undefined ? undefined : new URLSearchParams(body as Record<string, string>)
  const res = await app.requestRoot(path, { ...init, ...(form ? { body: form } : {}) })
  return { status: res.status, text: await res.text(), echoes }
}

function byPhase(steps: Step[]): Step[] {
  return [...steps].sort((a, b) => (a.probe.phase ?? 0) - (b.probe.phase ?? 0))
}

function describeStep(step: Step): string {
  return `${step.surface} ${step.method} ${step.template}`
}

/** The page or body text, checked against the answer the entry names. */
function check(step: Step, reply: Reply, answer: Answer | typeof OWN): void {
  const what = describeStep(step)
  if (answer === OWN) {
    expect(reply.status, `${what}: ${reply.text.slice(0, 300)}`).toBeLessThan(400)
    return
  }
  expect([what, reply.status], reply.text.slice(0, 500)).toEqual([what, answer.status])
  if (answer.body !== undefined) expect(JSON.parse(reply.text), what).toEqual(answer.body)
  if (answer.text !== undefined) expect(textOf(reply.text), what).toContain(answer.text)
}

// --- The tests ------------------------------------------------------------------------------------

let victim: Tenant
let intruder: Tenant
let ownership: Ownership

beforeAll(async () => {
  victim = await tenant(MARK)
  intruder = await tenant('intr')
  await app.worker()
  for (const t of [victim, intruder]) {
    for (const id of [t.batchId, t.spareBatchId]) await waitForBatchEnd(app, t.key, id)
  }
  // Nothing of the owner's moves while the walk looks.
  await app.stopWorkers()
  ownership = await ownershipOf(app.services.sql)
}, 120_000)

describe('the isolation walk', () => {
  it('walks every operation of the contract and every route of the dashboard and hosted pages', () => {
    const { dashboard, hosted } = routeTables()
    expect([
      ...unwalked(operationsOfContract(), API),
      ...unwalked(dashboard, DASHBOARD),
      ...unwalked(hosted, HOSTED),
    ]).toEqual([])
  })

  it('knows which account every row of the database belongs to', () => {
    // Counters keyed by a hash of an address or account, and worker heartbeats: no account's data.
    expect(ownership.unowned).toEqual([
      'mailroom_migrations',
      'public_submissions',
      'sign_in_attempts',
      'worker_processes',
    ])
  })

  it('live public pages show only what their owner made public', async () => {
    const page = await app.requestRoot(`/signup/${victim.slug}`)
    const html = await page.text()
    expect(page.status).toBe(200)
    expect(textOf(html)).toContain('Join our list')
    const form = await app.requestRoot(`/forms/${victim.formPublicId}`)
    expect(form.status).toBe(200)
    for (const text of [html, await form.text()]) {
      for (const secret of [victim.email, victim.from, ...victim.memberEmails, `${MARK} audience`]) {
        expect(text).not.toContain(secret)
      }
    }
  })

  // Some three hundred requests in turn: on a shared machine they may outlast the default timeout.
  it('another account reads and changes nothing of the owner’s, and is answered as the contract says', async () => {
    const steps = byPhase([
      ...stepsOf('api', API),
      ...stepsOf('dashboard', DASHBOARD),
      ...stepsOf('hosted', HOSTED),
    ])
    const before = await rowsOf(app.services.sql, ownership, victim.accountId)
    const privateOfVictim = [
      victim.email,
      victim.from,
      ...victim.memberEmails,
      `${MARK} audience`,
      `${MARK} closed`,
    ]
    for (const step of steps) {
      const reply = await send(step, intruder, step.probe, victim, intruder)
      check(step, reply, step.probe.answer)
      if (step.surface === 'hosted') {
        for (const text of privateOfVictim) expect(reply.text, describeStep(step)).not.toContain(text)
      } else {
        const shown = reply.echoes.reduce((text, echo) => text.replaceAll(echo, ''), reply.text)
        expect(shown, `${describeStep(step)} shows the owner's data`).not.toContain(MARK)
      }
    }
    expect(await rowsOf(app.services.sql, ownership, victim.accountId)).toEqual(before)
    expect(await crossLinks(app.services.sql, ownership, intruder.accountId, victim.accountId)).toEqual([])
    expect(await crossLinks(app.services.sql, ownership, victim.accountId, intruder.accountId)).toEqual([])

    // The controls: the same requests made by the owner on its own IDs succeed, so every entry
    // reached its route and a real resource.
    for (const step of steps) {
      const control = step.probe.control
      if (control === false) continue
      const named = control?.(victim)
      const parts: Pick<Probe, 'params' | 'body'> = named
        ? {
            params: () => named.params ?? {},
            ...(named.body === undefined ? {} : { body: () => named.body }),
          }
        : step.probe
      const reply = await send(step, victim, parts, victim, victim)
      expect(reply.status, `control of ${describeStep(step)}: ${reply.text.slice(0, 300)}`).toBeLessThan(400)
    }
  }, 180_000)
})
