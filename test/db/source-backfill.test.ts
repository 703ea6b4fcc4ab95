/**
 * The migration that keeps each email's source tells the records written before it: a batch's
 * emails are `batch`, a hosted form's notifications `form`, any other `api`.
 */
import { describe, expect, it } from 'vitest'
import { migrateDatabase } from '../../src/db/migrate.ts'
import { createLogger } from '../../src/log.ts'
import { useTestApp } from '../support/app.ts'
import { createdBatch } from '../support/batches.ts'
import { submittedForm } from '../support/forms.ts'
import { enqueued } from '../support/queue.ts'
import { startSender } from '../support/sending.ts'

const app = useTestApp()

describe('the source of records written before it was kept', () => {
  it('is batch for a batch’s emails, form for a form’s notification, api for the others', async () => {
    const s = await startSender(app, 'backfill', { plan: 'pro' })
    const api = await enqueued(app, s.key, { to: 'a@example.com', subject: 'Mine', text_body: 'x' })
    const batch = await createdBatch(app, s.key, {
      emails: [{ to: 'b@example.com', subject: 'Item', text_body: 'x' }],
    })
    await submittedForm(app, s.accountId, '192.0.2.9')
    // As the database was before: no source, no raw messages.
    await app.db.sql.unsafe(`
      alter table outbox drop column source, drop column raw_size, drop column needs_smtputf8;
      drop table outbox_raw_slices;
      delete from mailroom_migrations where name = '031_smtp_submissions.sql';`)

    expect(await migrateDatabase(app.db.sql, app.db.url, createLogger('silent'))).toEqual([
      '031_smtp_submissions.sql',
    ])
    const rows = await app.db.sql.unsafe<
      { id: number; subject: string; batch_id: number | null; source: string }[]
    >(`select id, subject, batch_id, source from outbox where account_id = ${s.accountId} order by id`)
    expect(rows.map((r) => [r.subject, r.source])).toEqual([
      ['Mine', 'api'],
      ['Item', 'batch'],
      ['New submission: Contact us', 'form'],
    ])
    expect(rows[0]?.id).toBe(api)
    expect(rows[1]?.batch_id).toBe(batch)
  })
})
