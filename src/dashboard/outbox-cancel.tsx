import type { ContentfulStatusCode } from 'hono/utils/http-status'
import type { OutboxDetail } from '../db/outbox-types.ts'
import { cancelEmail } from '../sending/changing-course.ts'
import { outboxRecord } from '../sending/outbox-views.ts'
import { confirmPage } from './confirm.tsx'
import type { DashboardContext } from './env.ts'
import { page, type Refusal } from './layout.tsx'
import { OUTBOX_PATH, RecordPage } from './outbox-record.tsx'
import { act } from './refusals.tsx'
import { type Routes, signedIn } from './resource.ts'

/**
 * Canceling a message from its page: the one confirmation page, then the same cancel as
 * POST /v1/emails/{id}/cancel; a refusal (a worker took it meanwhile) is shown on its page.
 */
export function registerOutboxCancel(on: Routes<OutboxDetail>): void {
  on.view('cancel', (c, record) =>
    confirmPage(c, {
      title: `Cancel message ${record.id}?`,
      section: OUTBOX_PATH,
      consequences: (
        <p>
          It will never be sent{record.scheduled_at ? ', at its scheduled time or later' : ''}. It stays in
          the outbox as canceled.
        </p>
      ),
      action: `${OUTBOX_PATH}/${record.id}/cancel`,
      label: 'Cancel the message',
      back: `${OUTBOX_PATH}/${record.id}`,
      keep: 'Keep it',
    }),
  )
  on.action('cancel', (c, record) =>
    act(
      c,
      `${OUTBOX_PATH}/${record.id}`,
      async () => {
        const { sql, accountId } = signedIn(c)
        await cancelEmail(sql, accountId, record.id)
        return `Message ${record.id} canceled: it will not be sent.`
      },
      (refusal, status) => recordPage(c, record.id, refusal, status),
    ),
  )
}

/** The message as it is now (a worker may have taken it meanwhile), with the refusal. */
async function recordPage(c: DashboardContext, id: number, refusal: Refusal, status: ContentfulStatusCode) {
  const { sql, accountId } = signedIn(c)
  const record = await outboxRecord(sql, accountId, id)
  return page(
    c,
    { title: `Message ${id}`, section: OUTBOX_PATH, refusal, status },
    <RecordPage record={record} />,
  )
}
