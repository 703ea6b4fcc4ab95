import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { leaveMessage } from '../accounts/sessions.ts'
import { AppError } from '../app-error.ts'
import { type AudienceWithCount, getAudience } from '../audiences/audiences.ts'
import { CSV_LIMITS, readMemberCsv } from '../audiences/member-csv.ts'
import { importMembers } from '../audiences/member-import.ts'
import { type ReadMembers, readMemberLines } from '../audiences/member-lines.ts'
import { counted } from '../wording.ts'
import type { DashboardContext } from './env.ts'
import { PostForm, type Refusal } from './layout.tsx'
import { type PostedFields, readPostedFields } from './posted-fields.ts'
import { refused } from './refusals.tsx'
import { type Routes, signedIn } from './resource.ts'

const LIST = '/dashboard/audiences'

/** The audience's page, shown again with a refusal and (typed members) the lines to correct. */
export type AudiencePage = (
  c: DashboardContext,
  audience: AudienceWithCount,
  state: { refusal?: Refusal; lines?: string | undefined },
  status?: ContentfulStatusCode,
) => Response | Promise<Response>

/** Members added to an audience: typed as lines, or imported from a CSV file. */
export function registerMemberImport(on: Routes<AudienceWithCount>, audiencePage: AudiencePage): void {
  on.action('members', async (c, audience) => {
    const text = (await readPostedFields(c)).text('lines')
    const refusedLines: string[] = []
    const chunks = function* () {
      for (const chunk of readMemberLines(text)) {
        refusedLines.push(...chunk.problems.map((p) => p.text))
        yield chunk
      }
    }
    return added(c, audience, audiencePage, chunks(), () => refusedLines.join('\n'))
  })

  on.action('members/csv', async (c, audience) => {
    const file = fileOf(await readPostedFields(c))
    return added(c, audience, audiencePage, readMemberCsv(new Uint8Array(await file.arrayBuffer())))
  })
}

function fileOf(form: PostedFields): File {
  const file = form.file('file')
  if (!file) throw new AppError('INVALID_CSV', 'Choose a CSV file to import')
  return file
}

/**
 * Adds what `chunks` hold. All fine: back to the audience with a message. Some lines refused:
 * the page again with a problem per line (the first hundred), and the typed lines refused put
 * back to correct. The file refused: the page again with the reason, nothing added.
 */
async function added(
  c: DashboardContext,
  audience: AudienceWithCount,
  audiencePage: AudiencePage,
  chunks: Iterable<ReadMembers> | AsyncIterable<ReadMembers>,
  /** Typed members: the lines refused, to put back in the box. */
  refusedLines?: () => string,
) {
  const { sql, accountId, session } = signedIn(c)
  let imported: Awaited<ReturnType<typeof importMembers>>
  try {
    imported = await importMembers(sql, accountId, audience.id, chunks)
  } catch (error) {
    return refused(error, (refusal, status) => audiencePage(c, audience, { refusal }, status))
  }
  const { inserted, duplicates, problems, moreProblems } = imported
  const done = `${counted(inserted, 'member')} added, ${duplicates} already in the audience.`
  if (problems.length === 0) {
    await leaveMessage(sql, session.id, done)
    return c.redirect(`${LIST}/${audience.id}`, 303)
  }
  const refusedCount = problems.length + moreProblems
  const refusal: Refusal = {
    message: `${done} ${refusedCount} line${refusedCount === 1 ? ' was' : 's were'} not added:`,
    lines: [
      ...problems.map((p) => `Line ${p.line}${p.text ? ` (${p.text})` : ''}: ${p.reason}`),
      ...(moreProblems ? [`… and ${moreProblems} more.`] : []),
    ],
  }
  return audiencePage(c, await getAudience(sql, accountId, audience.id), {
    refusal,
    lines: refusedLines?.(),
  })
}

/** The two ways to add members: lines typed (those refused put back in the box) and a CSV file. */
export function AddMembers(props: { action: string; token: string; lines: string | undefined }) {
  return (
    <section class="grid add-members">
      <article>
        <header>Add members as text</header>
        <PostForm action={props.action} token={props.token}>
          <textarea
            name="lines"
            rows={6}
            required
            aria-label="Members, one per line"
            placeholder={'ann@example.com, name=Ann, VIP\nbob@example.com'}
          >
            {props.lines ?? ''}
          </textarea>
          <small>
            One per line: the address, then <code>key=value</code> pairs separated by commas. A value without
            a key is stored as <code>attr_1</code>, <code>attr_2</code>, … in order.
          </small>
          <button type="submit">Add</button>
        </PostForm>
      </article>
      <article>
        <header>Import a CSV file</header>
        <PostForm action={`${props.action}/csv`} token={props.token} enctype="multipart/form-data">
          <input type="file" name="file" accept=".csv,text/csv" required aria-label="CSV file" />
          <small>
            UTF-8, with a header row naming the columns: <code>email</code>, and any other column becomes a
            value of that name. At most {CSV_LIMITS.members.toLocaleString('en-US')} members and{' '}
            {CSV_LIMITS.columns} columns a file.
          </small>
          <button type="submit">Import</button>
        </PostForm>
      </article>
    </section>
  )
}
