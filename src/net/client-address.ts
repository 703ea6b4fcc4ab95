import { getConnInfo } from '@hono/node-server/conninfo'
import type { Context } from 'hono'

/**
 * The client's address, for throttling: the socket's peer, or behind a trusted reverse proxy the
 * last address of X-Forwarded-For (the one that proxy saw; those before it are the client's say).
 */
export function clientAddress(c: Context, trustProxy: boolean): string | undefined {
  if (trustProxy) {
    const forwarded = c.req.header('x-forwarded-for')?.split(',').at(-1)?.trim()
    if (forwarded) return forwarded
  }
  try {
    return getConnInfo(c).remote.address
  } catch {
    // A request that did not come through a socket (the app called in-process).
    return undefined
  }
}
