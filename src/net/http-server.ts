import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getRequestListener } from '@hono/node-server'
import { guardedServerOptions, guardRequests, type RequestGuard } from './request-guard.ts'

export interface RunningServer {
  url: string
  /** Stops accepting, lets requests in progress finish, then resolves. */
  close(): Promise<void>
}

/** What the server serves: a Hono app, or anything else answering fetch requests. */
export interface FetchHandler {
  fetch(request: Request, env?: unknown): Response | Promise<Response>
}

/**
 * Serves `handler` (through @hono/node-server's listener, as its `serve` would) behind `guard`:
 * bodies that arrive too slowly are cut, and public pages take a bounded number of connections
 * from one address. `largestBody` is the largest body any route takes.
 */
export function listen(
  handler: FetchHandler,
  port: number,
  host: string,
  guard: RequestGuard,
  largestBody: number,
): Promise<RunningServer> {
  const listener = getRequestListener(handler.fetch, { hostname: host })
  const server = createServer(guardedServerOptions(guard, largestBody), guardRequests(guard, listener))
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      const info = server.address() as AddressInfo
      const url = `http://${info.family === 'IPv6' ? `[${info.address}]` : info.address}:${info.port}`
      resolve({
        url,
        close: () =>
          new Promise<void>((done, fail) => {
            server.close((error) => (error ? fail(error) : done()))
            // Idle keep-alive sockets would hold close() open; busy ones finish their request first.
            server.closeIdleConnections()
          }),
      })
    })
  })
}
