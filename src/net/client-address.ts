import { getConnInfo } from '@hono/node-server/conninfo'
import type { Context } from 'hono'

/**
 * The client's address, for throttling: the socket's peer, or behind a trusted reverse proxy the
 * last address of X-Forwarded-For (the one that proxy saw; those before it are the client's say).
 */
export function clientAddress(c: Context, trustProxy: boolean): string | undefined {
  let peer: string | undefined
  try {
    peer = getConnInfo(c).remote.address
  } catch {
    // A request that did not come through a socket (the app called in-process).
  }
  return addressOf(c.req.header('x-forwarded-for'), peer, trustProxy)
}

/** The same choice made from the X-Forwarded-For header and the socket's peer address. */
export function addressOf(
  forwardedFor: string | undefined,
  peer: string | undefined,
  trustProxy: boolean,
): string | undefined {
  const forwarded = trustProxy ? forwardedFor?.split(',').at(-1)?.trim() : undefined
  return forwarded || peer
}
