import { getMailbox, type MailboxView, setMailbox } from '../connections/mailbox.ts'
import type { DashboardContext } from './env.ts'
import { ActionButton, PostForm, When } from './layout.tsx'
import { type PostedFields, wholeNumber } from './posted-fields.ts'
import { signedIn } from './resource.ts'

/** The connection's mailbox, or null: what the connection page shows of it. */
export function mailboxOf(c: DashboardContext, connectionId: number): Promise<MailboxView | null> {
  return getMailbox(signedIn(c).sql, connectionId)
}

/** Tests and saves the mailbox typed in the form; the message the page shows. */
export async function saveMailbox(
  c: DashboardContext,
  connectionId: number,
  form: PostedFields,
): Promise<string> {
  const sameLoginAsSmtp = form.checked('same_login')
  const saved = await setMailbox(signedIn(c).services, connectionId, {
    host: form.text('mailbox_host'),
    port: wholeNumber(form, 'mailbox_port', 'Port') ?? 993,
    ...(sameLoginAsSmtp
      ? { sameLoginAsSmtp }
      : { username: form.text('mailbox_username'), password: form.text('mailbox_password') }),
    folder: form.optional('folder'),
    moveHandled: form.checked('move_handled'),
  })
  return `Mailbox ${saved.host} saved: the IMAP server accepted the login and the folder ${saved.folder}.`
}

/**
 * How reading the mailbox goes: its last failure (why the login or the folder was refused) until
 * a reading succeeds, else when it was last read. Sending never waits on it.
 */
function Reading(props: { mailbox: MailboxView }) {
  const { failure, failed_at: failedAt, read_at: readAt } = props.mailbox
  if (failure) {
    return (
      <>
        <mark class="tag bad">failing</mark> since <When at={failedAt} />: {failure}. Mail is still sent; the
        mailbox is tried again every minute.
      </>
    )
  }
  if (!readAt) return <>not read yet: the worker reads it every minute</>
  return (
    <>
      last read <When at={readAt} />
    </>
  )
}

/** What the mailbox is, and how reading it goes. */
function MailboxFacts(props: { mailbox: MailboxView }) {
  const { mailbox } = props
  return (
    <dl class="facts">
      <dt>Server</dt>
      <dd class="wrap">
        {mailbox.host}:{mailbox.port} ({mailbox.port === 993 ? 'TLS' : 'STARTTLS'})
      </dd>
      <dt>Login</dt>
      <dd class="words">{mailbox.same_login_as_smtp ? 'the same as SMTP' : mailbox.username}</dd>
      <dt>Folder</dt>
      <dd class="words">{mailbox.folder}</dd>
      <dt>Handled reports</dt>
      <dd>{mailbox.move_handled ? 'moved to Mailroom/Processed' : 'left in the folder'}</dd>
      <dt>Reading</dt>
      <dd class="wrap words">
        <Reading mailbox={mailbox} />
      </dd>
      <dt>Left in the folder</dt>
      <dd>
        {mailbox.unmatched_reports} {mailbox.unmatched_reports === 1 ? 'report' : 'reports'} for no email of
        this account, {mailbox.other_messages} other {mailbox.other_messages === 1 ? 'message' : 'messages'}
      </dd>
    </dl>
  )
}

/** Where the connection's bounce and complaint reports are read from: set, change or remove it. */
export function MailboxSection(props: { action: string; mailbox: MailboxView | null; token: string }) {
  const { action, mailbox, token } = props
  return (
    <section>
      <h2>Mailbox for bounces and complaints</h2>
      {mailbox ? (
        <MailboxFacts mailbox={mailbox} />
      ) : (
        <p>
          <small>None: Mailroom reads no reports for this connection.</small>
        </p>
      )}
      <PostForm action={`${action}/mailbox`} token={token}>
        <div class="grid">
          <label>
            IMAP host
            <input name="mailbox_host" required value={mailbox?.host ?? ''} autocomplete="off" />
          </label>
          <label>
            Port
            <select name="mailbox_port">
              <option value="993" selected={mailbox?.port !== 143}>
                993 (TLS)
              </option>
              <option value="143" selected={mailbox?.port === 143}>
                143 (STARTTLS)
              </option>
            </select>
          </label>
        </div>
        <label>
          <input type="checkbox" name="same_login" value="1" checked={mailbox?.same_login_as_smtp ?? false} />{' '}
          The same login as SMTP
        </label>
        <div class="grid">
          <label>
            Username
            <input name="mailbox_username" value={mailbox?.username ?? ''} autocomplete="off" />
          </label>
          <label>
            Password <small class="muted">(asked again on every change; tested first)</small>
            <input name="mailbox_password" type="password" autocomplete="new-password" />
          </label>
        </div>
        <label>
          Folder
          <input name="folder" value={mailbox?.folder ?? 'INBOX'} />
        </label>
        <label>
          <input type="checkbox" name="move_handled" value="1" checked={mailbox?.move_handled ?? true} /> Move
          handled reports to Mailroom/Processed
        </label>
        <button type="submit">Test and save the mailbox</button>
      </PostForm>
      {mailbox ? (
        <div class="actions">
          <ActionButton action={`${action}/mailbox-clear`} token={token} label="Remove the mailbox" />
        </div>
      ) : null}
    </section>
  )
}
