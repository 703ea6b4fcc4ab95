import { listen, type RunningServer } from '../net/http-server.ts'
import type { Services } from '../services.ts'
import { createApp } from './app.ts'

export type { RunningServer }

/** The API alone on a socket (benchmarks); `mailroom start` serves it with the dashboard (src/web.ts). */
export function startHttpServer(services: Services, port: number, host: string): Promise<RunningServer> {
  return listen(createApp(services), port, host)
}
