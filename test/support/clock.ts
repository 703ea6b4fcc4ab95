/**
 * Time moved forward without waiting for it: the service as it will be some time from now.
 * Mailroom reads one clock, mailroom_now() (src/db/functions/10_mailroom_clock.sql), the
 * database's clock plus the session setting mailroom.clock_offset_ms; the setting is given when
 * a pool opens its connections, so the later service is another pool on the same database.
 */
import { onTestFinished } from 'vitest'
import { createLogger } from '../../src/log.ts'
import { openServices } from '../../src/open-services.ts'
import type { Services } from '../../src/services.ts'
import { createWebApp } from '../../src/web.ts'
import { type RequestInit, requestOf, type TestApp } from './app.ts'

export const MINUTE = 60_000
export const HOUR = 60 * MINUTE
export const DAY = 24 * HOUR

export interface Later {
  /** The services on the test app's database, with the clock `aheadMs` ahead of real time. */
  services: Services
  /** A request to any path from the host root (e.g. `/dashboard`), answered at that later time. */
  requestRoot(path: string, init?: RequestInit): Promise<Response>
}

/**
 * The test app's service (its database and settings) as it will be `aheadMs` from now; closed
 * when the test ends.
 */
export async function later(app: Pick<TestApp, 'services'>, aheadMs: number): Promise<Later> {
  const { config } = app.services
  const services = await openServices(config, createLogger(config.logLevel), { clockOffsetMs: aheadMs })
  onTestFinished(() => services.close())
  const web = createWebApp(services)
  return {
    services,
    requestRoot: async (path, init = {}) => web.request(path, requestOf(init)),
  }
}
