/**
 * A recipient the server accepted and a report later said bounced was still handed the message:
 * a /send replayed under its Idempotency-Key answers the success it first answered.
 */
import { describe, expect, it } from 'vitest'
import { recordReport } from '../../src/db/reports.ts'
import { useTestApp } from '../support/app.ts'
import { postSend, startSender } from '../support/sending.ts'

const app = useTestApp()

describe('a recipient accepted, then bounced', () => {
  it("keeps its /send's replay a success", async () => {
    const s = await startSender(app, 'taken', { behaviour: { rejectRecipients: ['refused@example.com'] } })
    const body = { to: ['gone@example.com', 'refused@example.com'], subject: 'Hello', text_body: 'x' }
    const first = await postSend(app, s.key, body, 'taken-then-bounced')
    expect(first.body).toMatchObject({ success: true })
    const { outboxId, messageId } = first.body as { outboxId: number; messageId: string }
    const origin = { accountId: s.accountId, connectionId: s.connectionId, messageId }
    const line = {
      recipient: 'gone@example.com',
      kind: 'bounced' as const,
      status: '5.2.2',
      diagnostic: '552 full',
    }
    expect(await recordReport(app.services.sql, origin, [{ ...line, suppression: null }])).toMatchObject({
      matched: 1,
    })

    const replayed = await postSend(app, s.key, body, 'taken-then-bounced')
    expect(replayed.body).toMatchObject({ success: true, outboxId, replayed: true })
  })
})
