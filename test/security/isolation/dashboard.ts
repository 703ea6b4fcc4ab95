import { ACCOUNT_WIDE, DELETES, LATE, NOT_ON_YOUR_ACCOUNT, OWN, type Probe, probe } from './probes.ts'
import { MARK, PASSWORD, type Tenant } from './tenant.ts'

const connectionFields = { quota: '', per: 'day', rate: '600', password: '' }

export const DASHBOARD: Record<string, Probe[]> = {
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
  // The owner's own mailbox is set against a real IMAP server in test/connections/mailbox-dashboard.test.ts.
  'POST /dashboard/connections/:id/mailbox': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.connectionId }), {
      body: () => ({ mailbox_host: 'imap.example.com', mailbox_port: '993', same_login: 'on' }),
      control: false,
    }),
  ],
  'POST /dashboard/connections/:id/mailbox-clear': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.connectionId }), { control: false }),
  ],
  'GET /dashboard/connections/:id/delete': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.connectionId }))],
  'POST /dashboard/connections/:id/delete': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.connectionId }), { phase: ACCOUNT_WIDE }),
  ],
  'GET /dashboard/keys': [probe(OWN)],
  'GET /dashboard/smtp': [probe(OWN)],
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
  'GET /dashboard/outbox/:id/cancel': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.spareScheduledId }))],
  'POST /dashboard/outbox/:id/cancel': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.spareScheduledId }), { phase: DELETES }),
  ],
  'GET /dashboard/batches': [probe(OWN)],
  'GET /dashboard/batches/:id': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.batchId }))],
  'GET /dashboard/batches/:id/live': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.batchId }))],
  'POST /dashboard/batches/:id/retry': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.batchId }))],
  'GET /dashboard/batches/:id/cancel': [probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.spareScheduledBatchId }))],
  'POST /dashboard/batches/:id/cancel': [
    probe(NOT_ON_YOUR_ACCOUNT, (t) => ({ id: t.spareScheduledBatchId }), { phase: DELETES }),
  ],
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
  'GET /dashboard/suppressions': [
    probe(OWN),
    // Searched for the other's address: nothing of theirs.
    probe({ status: 200, text: 'No suppressed address matches.' }, undefined, {
      query: (t) => ({ q: t.suppressedEmail }),
      control: false,
    }),
  ],
  'POST /dashboard/suppressions': [
    probe(OWN, undefined, {
      body: (_t, me) => ({ addresses: `${me.label}-typed-suppressed@example.com`, scope: 'all' }),
    }),
  ],
  'POST /dashboard/suppressions/csv': [probe(OWN, undefined, { body: (_t, me) => csvUpload(me) })],
  'GET /dashboard/suppressions/export.csv': [probe(OWN)],
  'GET /dashboard/suppressions/remove': [
    probe(NOT_ON_YOUR_ACCOUNT, undefined, { query: (t) => ({ email: t.suppressedEmail }) }),
  ],
  'POST /dashboard/suppressions/remove': [
    probe(NOT_ON_YOUR_ACCOUNT, undefined, {
      query: (t) => ({ email: t.pageSuppressedEmail }),
      phase: DELETES,
    }),
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
