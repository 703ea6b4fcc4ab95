/** The API entries of the isolation walk: every operation of openapi/openapi.yaml. */
import { expect } from 'vitest'
import {
  ACCESS_DENIED,
  BATCH_NOT_FOUND,
  CONNECTION_NOT_FOUND,
  DELETES,
  email,
  inlineTemplate,
  LATE,
  OWN,
  type Probe,
  probe,
  simple,
  standard,
  WEBHOOK_NOT_FOUND,
} from './probes.ts'
import { MARK } from './tenant.ts'

export const API: Record<string, Probe[]> = {
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
  'POST /batches/{id}/cancel': [
    probe(BATCH_NOT_FOUND, (t) => ({ id: t.scheduledBatchId }), { phase: DELETES }),
  ],
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
  'PATCH /emails/{id}': [
    probe(standard(404, 'OUTBOX_RECORD_NOT_FOUND'), (t) => ({ id: t.scheduledId }), {
      body: () => ({ scheduled_at: new Date(Date.now() + 48 * 3_600_000).toISOString() }),
    }),
  ],
  'POST /emails/{id}/cancel': [
    probe(standard(404, 'OUTBOX_RECORD_NOT_FOUND'), (t) => ({ id: t.scheduledId }), { phase: DELETES }),
  ],
  'GET /suppressions': [
    probe(OWN),
    // Searched for the other's address: nothing of theirs.
    probe({ status: 200, body: expect.objectContaining({ suppressions: [] }) }, undefined, {
      query: (t) => ({ email: t.suppressedEmail }),
      control: false,
    }),
  ],
  'POST /suppressions': [
    probe({ status: 201 }, undefined, {
      body: (_t, me) => ({ emails: [`${me.label}-new-suppressed@example.com`] }),
    }),
  ],
  'GET /suppressions/{email}': [
    probe(standard(404, 'SUPPRESSION_NOT_FOUND'), (t) => ({ email: t.suppressedEmail })),
  ],
  'DELETE /suppressions/{email}': [
    probe(standard(404, 'SUPPRESSION_NOT_FOUND'), (t) => ({ email: t.spareSuppressedEmail }), {
      phase: DELETES,
    }),
  ],
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
