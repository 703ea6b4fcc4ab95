import { Hono } from 'hono'
import { largestBodyBytes } from './config.ts'
import { createDashboard } from './dashboard/app.ts'
import { createHosted } from './hosted/app.ts'
import { createApp } from './http/app.ts'
import { listen, type RunningServer } from './net/http-server.ts'
import { PUBLIC_BODY_LIMIT_BYTES } from './net/page-app.ts'
import { requestGuard } from './net/request-guard.ts'
import type { Services } from './services.ts'

/** The public hosted pages and their stylesheet, served by their own app. */
const HOSTED_PREFIXES = ['/signup', '/forms', '/unsubscribe', '/hosted']
/** Where anyone may post a body without a key or a session. */
const SIGN_IN = '/dashboard/login'

function isPublicPage(path: string): boolean {
  return (
    path === SIGN_IN || HOSTED_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))
  )
}

/**
 * Everything the service serves over HTTP, in one process: `/dashboard` and below go to the
 * dashboard, the public hosted pages (`/signup`, `/forms`, `/unsubscribe`, their `/hosted`
 * stylesheet) to their own app, everything else to the API (which answers unknown paths with its JSON 404). Each
 * keeps its own error and not-found handling.
 */
export function createWebApp(services: Services): Hono {
  const api = createApp(services)
  const dashboard = createDashboard(services)
  const hosted = createHosted(services)
  const web = new Hono()
  web.all('/dashboard/*', (c) => dashboard.fetch(c.req.raw, c.env))
  for (const prefix of HOSTED_PREFIXES) {
    web.all(`${prefix}/*`, (c) => hosted.fetch(c.req.raw, c.env))
  }
  web.all('*', (c) => api.fetch(c.req.raw, c.env))
  return web
}

export function startWebServer(services: Services, port: number, host: string): Promise<RunningServer> {
  const guard = requestGuard(services.config, isPublicPage, PUBLIC_BODY_LIMIT_BYTES)
  return listen(createWebApp(services), port, host, guard, largestBodyBytes(services.config))
}
