import { HONEYPOT_FIELD } from '../forms/submission.ts'
import { clientAddress } from '../net/client-address.ts'
import {
  confirmSubscription,
  pendingConfirmation,
  publicSignupPage,
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

const THANKS = 'Thank you. Check your inbox if a confirmation is needed.'

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

  app.get('/signup/:slug', async (c) => {
    const page = await publicSignupPage(c.get('services').sql, c.req.param('slug'))
    return hostedPage(
      c,
      page.title,
      <>
        {page.description ? <p>{page.description}</p> : null}
        <form method="post">
          <label>
            Email
            <input type="email" name="email" required autocomplete="email" maxlength={254} />
          </label>
          <Honeypot />
          <button type="submit">Subscribe</button>
        </form>
      </>,
    )
  })

  app.post('/signup/:slug', async (c) => {
    const { sql, config } = c.get('services')
    const fields = await submittedFields(c)
    const field = (name: string) => fields.find(([n]) => n === name)?.[1] ?? ''
    await subscribe(sql, config.publicUrl, {
      slug: c.req.param('slug'),
      email: field('email'),
      honeypot: field(HONEYPOT_FIELD) !== '',
      client: clientAddress(c, config.trustProxy),
    })
    return thanks(c, THANKS)
  })
}

export function thanks(c: HostedContext, message: string) {
  if (wantsJson(c)) return c.json({ success: true, message }, 200)
  return hostedPage(c, 'Thank you', <p role="status">{message}</p>)
}
