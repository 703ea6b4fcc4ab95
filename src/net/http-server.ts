import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'

export interface RunningServer {
  url: string
  /** Stops accepting, lets requests in progress finish, then resolves. */
  close(): Promise<void>
}

/** What the server serves: a Hono app, or anything else answering fetch requests. */
export interface FetchHandler {
  fetch(request: Request, env?: unknown): Response | Promise<Response>
}

export function listen(handler: FetchHandler, port: number, host: string): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: handler.fetch, port, hostname: host }, (info: AddressInfo) => {
      const url = `http://${info.family === 'IPv6' ? `[${info.address}]` : info.address}:${info.port}`
      resolve({
        url,
        close: () =>
          new Promise<void>((done, fail) => {
            server.close((error) => (error ? fail(error) : done()))
            // Idle keep-alive sockets would hold close() open; busy ones finish their request first.
            if ('closeIdleConnections' in server) server.closeIdleConnections()
          }),
      })
    })
    server.once('error', reject)
  })
}
