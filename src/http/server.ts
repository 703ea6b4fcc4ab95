import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import type { Services } from '../services.ts'
import { createApp } from './app.ts'

export interface RunningServer {
  url: string
  /** Stops accepting, lets requests in progress finish, then resolves. */
  close(): Promise<void>
}

export function startHttpServer(services: Services, port: number, host: string): Promise<RunningServer> {
  const app = createApp(services)
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port, hostname: host }, (info: AddressInfo) => {
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
