import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { changePassword, PASSWORD_LENGTH } from '../accounts/passwords.ts'
import { leaveMessage, startSession } from '../accounts/sessions.ts'
import { invalidInput } from '../app-error.ts'
import { sessionCookie } from './cookies.ts'
import type { Dashboard, DashboardContext } from './env.ts'
import { PostForm, page, type Refusal } from './layout.tsx'
import { readPostedFields } from './posted-fields.ts'
import { refused } from './refusals.tsx'
import { signedIn } from './resource.ts'

const PAGE = '/dashboard/account'

/** The account: its plan, and a change of password (which signs out every other browser). */
export function registerAccount(app: Dashboard): void {
  app.get(PAGE, (c) => accountPage(c, {}))

  app.post(`${PAGE}/password`, async (c) => {
    const form = await readPostedFields(c)
    const { sql, accountId } = signedIn(c)
    try {
      if (form.text('new_password') !== form.text('repeat_password')) {
        throw invalidInput([
          { path: ['repeat_password'], message: 'the two new passwords differ', code: 'custom' },
        ])
      }
      await changePassword(sql, accountId, {
        current: form.text('current_password'),
        next: form.text('new_password'),
      })
    } catch (error) {
      return refused(error, (refusal, status) => accountPage(c, { refusal }, status))
    }
    // Every session ended with the change; this browser gets a new one.
    const { token, sessionId } = await startSession(sql, accountId)
    sessionCookie.set(c, token)
    await leaveMessage(
      sql,
      sessionId,
      'Password changed. Every other browser signed in to this account is signed out.',
    )
    return c.redirect(PAGE, 303)
  })
}

function accountPage(c: DashboardContext, state: { refusal?: Refusal }, status: ContentfulStatusCode = 200) {
  const session = c.get('session')
  return page(
    c,
    { title: 'Account', section: PAGE, refusal: state.refusal, status },
    <>
      <dl class="facts">
        <dt>Email</dt>
        <dd class="words">{session.email}</dd>
        <dt>Plan</dt>
        <dd>{session.plan === 'pro' ? 'Pro' : 'Free'} (the operator changes it)</dd>
        <dt>Account ID</dt>
        <dd>{session.accountId}</dd>
      </dl>
      <section>
        <h2>Change the password</h2>
        <PostForm action={`${PAGE}/password`} token={c.get('formToken')}>
          <input type="email" name="email" value={session.email} autocomplete="username" hidden />
          <label>
            Current password
            <input type="password" name="current_password" required autocomplete="current-password" />
          </label>
          <div class="grid">
            <label>
              New password{' '}
              <small class="muted">
                ({PASSWORD_LENGTH.min} to {PASSWORD_LENGTH.max} characters)
              </small>
              <input
                type="password"
                name="new_password"
                required
                minlength={PASSWORD_LENGTH.min}
                maxlength={PASSWORD_LENGTH.max}
                autocomplete="new-password"
              />
            </label>
            <label>
              The new password again
              <input type="password" name="repeat_password" required autocomplete="new-password" />
            </label>
          </div>
          <button type="submit">Change the password</button>
        </PostForm>
      </section>
    </>,
  )
}
