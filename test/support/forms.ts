/** Hosted forms as a visitor uses them. */
import { createForm } from '../../src/forms/forms.ts'
import { submitForm } from '../../src/forms/submission.ts'
import type { TestApp } from './app.ts'

/** A new "Contact us" form of the account, submitted once from `client`: its notification is queued. */
export async function submittedForm(app: TestApp, accountId: number, client: string): Promise<void> {
  const form = await createForm(app.services.sql, accountId, { name: 'Contact us' }, 'http://mailroom.test')
  await submitForm(app.services.sql, {
    publicId: form.public_id,
    fields: [['message', 'Hello']],
    origin: undefined,
    ownOrigin: 'http://mailroom.test',
    client,
  })
}
