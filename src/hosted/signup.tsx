import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { AppError } from '../app-error.ts'
import { HONEYPOT_FIELD } from '../forms/submission.ts'
import { clientAddress } from '../net/client-address.ts'
import {
  confirmSubscription,
  type PublicSignupPage,
  pendingConfirmation,
  publicSignupPage,
  type SignupOutcome,
  subscribe,
} from '../signups/signup-pages.ts'
import type { Hosted, HostedContext } from './env.ts'
import { hostedPage, wantsJson } from './layout.tsx'
import { submittedFields } from './submission-body.ts'

/** The field people never see; filled, it marks a bot (same name as on forms). */
export function Honeypot() {
  return (
    <div
      aria-hidden="true"
      style="position:absolute;left:-10000px;top:auto;width:1px;height:1px;overflow:hidden"
    >
      <label>
        Leave this empty
        <input type="text" name={HONEYPOT_FIELD} tabindex={-1} autocomplete="off" />
      </label>
    </div>
  )
}

/** What the page says once it took an address: with double opt-in, nobody joins before confirming. */
const THANKS: Record<SignupOutcome, string> = {
  joined: 'Thank you: you are subscribed.',
  confirmation_sent:
    'Thank you. Check your inbox: you are subscribed once you follow the link in the email we sent.',
}

/** GET and POST /signup/{slug}, and the double opt-in link's page (GET asks, POST confirms). */
export function registerSignup(app: Hosted): void {
  app.get('/signup/confirm/:token', async (c) => {
    const { title } = await pendingConfirmation(c.get('services').sql, c.req.param('token'))
    return hostedPage(
      c,
      title,
      <form method="post">
        <p>One more step: confirm that you want to receive this list's emails.</p>
        <button type="submit">Confirm my subscription</button>
      </form>,
    )
  })

  app.post('/signup/confirm/:token', async (c) => {
    const { title } = await confirmSubscription(c.get('services').sql, c.req.param('token'))
    return hostedPage(c, title, <p role="status">You are subscribed. Thank you.</p>)
  })

  app.get('/signup/:slug', async (c) =>
    signupForm(c, await publicSignupPage(c.get('services').sql, c.req.param('slug')), {}),
  )

  app.post('/signup/:slug', async (c) => {
    const { sql, config } = c.get('services')
    const fields = await submittedFields(c)
    const field = (name: string) => fields.find(([n]) => n === name)?.[1] ?? ''
    try {
      const outcome = await subscribe(sql, config.publicUrl, {
        slug: c.req.param('slug'),
        email: field('email'),
        honeypot: field(HONEYPOT_FIELD) !== '',
        client: clientAddress(c, config.trustProxy),
      })
      return thanks(c, THANKS[outcome])
    } catch (error) {
      const problem = emailProblem(error)
      // A person at a browser gets the form again, their address in it and the problem beside it.
      if (problem === undefined || wantsJson(c)) throw error
      const page = await publicSignupPage(sql, c.req.param('slug'))
      return signupForm(c, page, { email: field('email'), problem }, 400)
    }
  })
}

/** What is wrong with the address typed, when that is why the sign-up was refused. */
function emailProblem(error: unknown): string | undefined {
  if (!(error instanceof AppError) || error.code !== 'VALIDATION_ERROR') return undefined
  return error.issues?.find((issue) => issue.path[0] === 'email')?.message
}

function signupForm(
  c: HostedContext,
  page: PublicSignupPage,
  typed: { email?: string; problem?: string },
  status: ContentfulStatusCode = 200,
) {
  return hostedPage(
    c,
    page.title,
    <>
      {page.description ? <p>{page.description}</p> : null}
      <form method="post">
        <label>
          Email
          <input
            type="email"
            name="email"
            required
            autocomplete="email"
            maxlength={254}
            value={typed.email}
            aria-invalid={typed.problem ? 'true' : undefined}
            aria-describedby={typed.problem ? 'email-problem' : undefined}
          />
          {typed.problem ? <small id="email-problem">{typed.problem}</small> : null}
        </label>
        <Honeypot />
        <button type="submit">Subscribe</button>
      </form>
    </>,
    status,
  )
}

export function thanks(c: HostedContext, message: string) {
  if (wantsJson(c)) return c.json({ success: true, message }, 200)
  return hostedPage(c, 'Thank you', <p role="status">{message}</p>)
}
