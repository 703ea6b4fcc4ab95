import { createMiddleware } from 'hono/factory'
import { originAllowed, publicForm, submitForm } from '../forms/submission.ts'
import { clientAddress } from '../net/client-address.ts'
import type { Hosted, HostedEnv } from './env.ts'
import { hostedPage, wantsJson } from './layout.tsx'
import { Honeypot, thanks } from './signup.tsx'
import { submittedFields } from './submission-body.ts'

/**
 * Lets pages of the allowed origins (any, when the form lists none) read the answer of a JSON
 * submission made with fetch, and make it (the preflight of a JSON POST).
 */
const cors = createMiddleware<HostedEnv>(async (c, next) => {
  const origin = c.req.header('origin')
  await next()
  if (origin === undefined) return
  const form = await publicForm(c.get('services').sql, c.req.param('id') ?? '').catch(() => undefined)
  if (!form || !originAllowed(form, origin, new URL(c.get('services').config.publicUrl).origin)) return
  c.header('Access-Control-Allow-Origin', origin)
  c.header('Vary', 'Origin')
})

/** GET /forms/{id} (a hosted page with the form) and POST (a submission, from any site). */
export function registerForms(app: Hosted): void {
  app.use('/forms/:id', cors)

  app.options('/forms/:id', (c) => {
    c.header('Access-Control-Allow-Methods', 'POST')
    c.header('Access-Control-Allow-Headers', 'Content-Type, Accept')
    c.header('Access-Control-Max-Age', '600')
    return c.body(null, 204)
  })

  app.get('/forms/:id', async (c) => {
    const form = await publicForm(c.get('services').sql, c.req.param('id'))
    return hostedPage(
      c,
      form.name,
      <form method="post">
        <label>
          Name
          <input type="text" name="name" autocomplete="name" />
        </label>
        <label>
          Email
          <input type="email" name="email" autocomplete="email" />
        </label>
        <label>
          Message
          <textarea name="message" rows={6} />
        </label>
        <Honeypot />
        <button type="submit">Send</button>
      </form>,
    )
  })

  app.post('/forms/:id', async (c) => {
    const { sql, config } = c.get('services')
    const { redirectUrl } = await submitForm(sql, {
      publicId: c.req.param('id'),
      fields: await submittedFields(c),
      origin: c.req.header('origin'),
      ownOrigin: new URL(config.publicUrl).origin,
      client: clientAddress(c, config.trustProxy),
    })
    if (wantsJson(c)) return c.json({ success: true, message: 'Thank you, your message was sent.' }, 200)
    // Only the form's own setting, never an address the request names: no open redirect.
    if (redirectUrl !== null) return c.redirect(redirectUrl, 303)
    return thanks(c, 'Thank you, your message was sent.')
  })
}
