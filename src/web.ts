import { Hono } from 'hono'
import { createDashboard } from './dashboard/app.ts'
import { createHosted } from './hosted/app.ts'
import { createApp } from './http/app.ts'
import { listen, type RunningServer } from './net/http-server.ts'
import type { Services } from './services.ts'

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
  for (const prefix of ['/signup/*', '/forms/*', '/unsubscribe/*', '/hosted/*']) {
    web.all(prefix, (c) => hosted.fetch(c.req.raw, c.env))
  }
  web.all('*', (c) => api.fetch(c.req.raw, c.env))
  return web
}

export function startWebServer(services: Services, port: number, host: string): Promise<RunningServer> {
  return listen(createWebApp(services), port, host)
}
