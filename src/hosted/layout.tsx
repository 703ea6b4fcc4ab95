import type { Child } from 'hono/jsx'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { packageFile, staticAsset } from '../net/static-asset.ts'
import type { Hosted, HostedContext } from './env.ts'

export const PICO = staticAsset(
  packageFile('@picocss/pico', 'css/pico.min.css'),
  '/hosted/pico.css',
  'text/css; charset=utf-8',
)

export function registerHostedAssets(app: Hosted): void {
  app.get(PICO.path, (c) => PICO.respond(c.req.raw))
}

/** A public page: the service's stylesheet, no script, nothing from another host. */
export async function hostedPage(
  c: HostedContext,
  title: string,
  content: Child,
  status: ContentfulStatusCode = 200,
) {
  const page = (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <meta name="robots" content="noindex" />
        <title>{title}</title>
        <link rel="stylesheet" href={PICO.href} />
      </head>
      <body>
        <main class="container" style="max-width: 36rem">
          <h1>{title}</h1>
          {content}
        </main>
      </body>
    </html>
  )
  return c.html(`<!doctype html>${await page}`, status)
}

/** The request asks for JSON: it says so in Accept, or it sent JSON. */
export function wantsJson(c: HostedContext): boolean {
  const accept = c.req.header('accept') ?? ''
  const type = c.req.header('content-type') ?? ''
  return /application\/json/i.test(accept) || /^application\/json/i.test(type)
}
