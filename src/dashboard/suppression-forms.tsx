import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { leaveMessage } from '../accounts/sessions.ts'
import { AppError } from '../app-error.ts'
import {
  importSuppressionCsv,
  SUPPRESSION_CSV_ENTRIES,
  suppressionCsv,
} from '../suppressions/suppression-csv.ts'
import { counted } from '../wording.ts'
import type { Dashboard, DashboardContext } from './env.ts'
import { PostForm, type Refusal } from './layout.tsx'
import { readPostedFields } from './posted-fields.ts'
import { refused } from './refusals.tsx'
import { signedIn } from './resource.ts'

export const SUPPRESSIONS = '/dashboard/suppressions'

/** What the list page shows besides the list: a refusal, and the typed addresses to correct. */
export interface ListState {
  refusal?: Refusal
  typed?: { addresses: string; scope: string }
}

export type ListPage = (
  c: DashboardContext,
  state: ListState,
  status?: ContentfulStatusCode,
) => Response | Promise<Response>

/** What adding addresses did, as the message after it says. */
export function addedMessage(added: { inserted: number; existing: number }): string {
  return `${counted(added.inserted, 'address', 'addresses')} suppressed, ${added.existing} already on the list as strongly.`
}

/** The suppression list as a file: imported from CSV, exported as CSV. */
export function registerSuppressionFiles(app: Dashboard, listPage: ListPage): void {
  app.post(`${SUPPRESSIONS}/csv`, async (c) => {
    const file = (await readPostedFields(c)).file('file')
    const { sql, accountId, session } = signedIn(c)
    let imported: Awaited<ReturnType<typeof importSuppressionCsv>>
    try {
      if (!file) throw new AppError('INVALID_CSV', 'Choose a CSV file to import')
      imported = await importSuppressionCsv(sql, accountId, new Uint8Array(await file.arrayBuffer()))
    } catch (error) {
      return refused(error, (refusal, status) => listPage(c, { refusal }, status))
    }
    const done = addedMessage(imported)
    if (imported.problems.length === 0) {
      await leaveMessage(sql, session.id, done)
      return c.redirect(SUPPRESSIONS, 303)
    }
    const count = imported.problems.length + imported.moreProblems
    const refusal: Refusal = {
      message: `${done} ${count} line${count === 1 ? ' was' : 's were'} not added:`,
      lines: [
        ...imported.problems.map((p) => `Line ${p.line} (${p.text}): ${p.reason}`),
        ...(imported.moreProblems ? [`… and ${imported.moreProblems} more.`] : []),
      ],
    }
    return listPage(c, { refusal })
  })

  // The whole list, a page of entries read only when the browser takes the one before.
  app.get(`${SUPPRESSIONS}/export.csv`, (c) => {
    const { sql, accountId } = signedIn(c)
    const pieces = suppressionCsv(sql, accountId)
    const encoder = new TextEncoder()
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = await pieces.next()
        if (next.done) controller.close()
        else controller.enqueue(encoder.encode(next.value))
      },
      async cancel() {
        await pieces.return(undefined)
      },
    })
    return c.body(body, 200, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': 'attachment; filename="suppressions.csv"',
      'cache-control': 'no-store',
    })
  })
}

/** The two ways to add addresses: typed one per line (put back when refused), and a CSV file. */
export function AddSuppressions(props: { token: string; typed: ListState['typed'] }) {
  const scope = props.typed?.scope === 'marketing' ? 'marketing' : 'all'
  return (
    <section class="grid add-members">
      <article>
        <header>Add addresses</header>
        <PostForm action={SUPPRESSIONS} token={props.token}>
          <textarea
            name="addresses"
            rows={5}
            required
            aria-label="Addresses, one per line"
            placeholder={'gone@example.com\nno-more@example.com'}
            spellcheck={false}
            autocapitalize="off"
          >
            {props.typed?.addresses ?? ''}
          </textarea>
          <label>
            Scope
            <select name="scope">
              <option value="all" selected={scope === 'all'}>
                all: no email goes to them
              </option>
              <option value="marketing" selected={scope === 'marketing'}>
                marketing: batches skip them
              </option>
            </select>
          </label>
          <small>One address a line, 1 to 1000 at a time, added with the reason manual.</small>
          <button type="submit">Suppress</button>
        </PostForm>
      </article>
      <article>
        <header>Import a CSV file</header>
        <PostForm action={`${SUPPRESSIONS}/csv`} token={props.token} enctype="multipart/form-data">
          <input type="file" name="file" accept=".csv,text/csv" required aria-label="CSV file" />
          <small>
            UTF-8, with a header row: an <code>email</code> column and, if you like, a <code>scope</code> one
            (<code>all</code> when empty). At most {SUPPRESSION_CSV_ENTRIES.toLocaleString('en-US')} addresses
            a file, each added with the reason manual. The export's file imports as it is.
          </small>
          <button type="submit">Import</button>
        </PostForm>
      </article>
    </section>
  )
}
