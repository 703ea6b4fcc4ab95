import { AppError } from '../app-error.ts'
import { unsubscribe, verifyUnsubscribeToken } from '../audiences/unsubscribe.ts'
import type { Hosted } from './env.ts'
import { hostedPage } from './layout.tsx'

const NOT_VALID = 'This unsubscribe link is not valid.'

/**
 * GET /unsubscribe/{token} shows one button (mail scanners that fetch links unsubscribe nobody);
 * POST, the button's or a mail client's one-click request (RFC 8058), removes the member.
 */
export function registerUnsubscribe(app: Hosted): void {
  app.get('/unsubscribe/:token', (c) => {
    if (!verifyUnsubscribeToken(c.get('services').secret, c.req.param('token'))) {
      throw new AppError('LINK_NOT_VALID', NOT_VALID)
    }
    return hostedPage(
      c,
      'Unsubscribe',
      <form method="post">
        <p>Stop receiving these emails?</p>
        <button type="submit">Unsubscribe</button>
      </form>,
    )
  })

  app.post('/unsubscribe/:token', async (c) => {
    const { sql, secret } = c.get('services')
    if (!(await unsubscribe(sql, secret, c.req.param('token'))))
      throw new AppError('LINK_NOT_VALID', NOT_VALID)
    return hostedPage(c, 'Unsubscribed', <p role="status">You are unsubscribed: no more of these emails.</p>)
  })
}
