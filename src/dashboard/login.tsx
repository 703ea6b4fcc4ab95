import { randomBytes } from 'node:crypto'
import { anyoneCanSignIn } from '../accounts/passwords.ts'
import { endSession, resumeSession } from '../accounts/sessions.ts'
import { signIn } from '../accounts/sign-in.ts'
import { AppError } from '../app-error.ts'
import { clientAddress } from '../net/client-address.ts'
import { sessionCookie, signInCookie } from './cookies.ts'
import type { Dashboard, DashboardContext } from './env.ts'
import { PostForm, plainPage, type Refusal, RefusalNotice } from './layout.tsx'
import { readPostedFields } from './posted-fields.ts'
import { refusalOf, statusOf } from './refusals.tsx'
import { checkFormToken, sessionFormToken } from './security.ts'
import { requireSession, safeNext } from './session.ts'

/** GET and POST /dashboard/login: open to anyone. */
export function registerSignIn(app: Dashboard): void {
  app.get('/dashboard/login', async (c) => {
    const next = safeNext(c.req.query('next'))
    const session = await resumeSession(c.get('services').sql, sessionCookie.get(c), { takeFlash: false })
    if (session) return c.redirect(next, 303)
    return signInPage(c, { next })
  })

  app.post('/dashboard/login', async (c) => {
    await checkFormToken(c, signInCookie.get(c))
    const form = await readPostedFields(c)
    const next = safeNext(form.text('next'))
    try {
      const { token } = await signIn(c.get('services').sql, {
        email: form.text('email'),
        password: form.text('password'),
        clientAddress: clientAddress(c, c.get('services').config.trustProxy),
      })
      sessionCookie.set(c, token)
      return c.redirect(next, 303)
    } catch (error) {
      if (!(error instanceof AppError)) throw error
      if (error.details?.retryAfter) c.header('Retry-After', String(error.details.retryAfter))
      return signInPage(c, { next, email: form.text('email'), refusal: refusalOf(error) }, statusOf(error))
    }
  })
}

/** POST /dashboard/logout: the session ends here and now. */
export function registerSignOut(app: Dashboard): void {
  app.post('/dashboard/logout', requireSession, sessionFormToken, async (c) => {
    await endSession(c.get('services').sql, sessionCookie.get(c))
    sessionCookie.clear(c)
    return c.redirect('/dashboard/login', 303)
  })
}

interface SignInState {
  next: string
  email?: string
  refusal?: Refusal
}

async function signInPage(
  c: DashboardContext,
  state: SignInState,
  status: 200 | ReturnType<typeof statusOf> = 200,
) {
  let token = signInCookie.get(c)
  if (!token || !/^[A-Za-z0-9_-]{22}$/.test(token)) {
    token = randomBytes(16).toString('base64url')
    signInCookie.set(c, token)
  }
  const fresh = !(await anyoneCanSignIn(c.get('services').sql))
  return plainPage(
    c,
    'Sign in to Mailroom',
    <>
      {fresh ? <FirstAccount /> : null}
      {state.refusal ? <RefusalNotice refusal={state.refusal} /> : null}
      <PostForm action="/dashboard/login" token={token}>
        <input type="hidden" name="next" value={state.next} />
        <label>
          Email
          <input type="email" name="email" autocomplete="username" required value={state.email ?? ''} />
        </label>
        <label>
          Password
          <input type="password" name="password" autocomplete="current-password" required />
        </label>
        <button type="submit">Sign in</button>
      </PostForm>
      <p>
        <small>
          Forgot the password? The operator sets a new one with{' '}
          <code>mailroom account set-password &lt;account-id&gt; --password-stdin</code>.
        </small>
      </p>
    </>,
    status,
  )
}

/** A new install has no account that can sign in: only the operator can make one, not the web. */
function FirstAccount() {
  return (
    <article class="first-account">
      <h2>No account yet</h2>
      <p>
        Accounts are made by the operator, on the machine Mailroom runs on, so that nobody can claim a new
        install from the web. Create the first one with:
      </p>
      <pre>
        <code>npx mailroom account create --email you@example.com --plan pro --password-stdin</code>
      </pre>
      <p>
        It reads the password (12 to 1024 characters) from standard input. An existing account gets one with{' '}
        <code>npx mailroom account set-password &lt;account-id&gt; --password-stdin</code>.
      </p>
    </article>
  )
}
