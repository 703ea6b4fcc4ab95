import { largestBodyBytes } from '../config.ts'
import { listen, type RunningServer } from '../net/http-server.ts'
import { requestGuard } from '../net/request-guard.ts'
import type { Services } from '../services.ts'
import { createApp } from './app.ts'

export type { RunningServer }

/** The API alone on a socket (benchmarks); `mailroom start` serves it with the dashboard (src/web.ts). */
export function startHttpServer(services: Services, port: number, host: string): Promise<RunningServer> {
  const { config } = services
  const guard = requestGuard(config, () => false, config.bodyLimitBytes)
  return listen(createApp(services), port, host, guard, largestBodyBytes(config))
}
