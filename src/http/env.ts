import type { OpenAPIHono } from '@hono/zod-openapi'
import type { Caller } from '../keys/caller.ts'
import type { CallerClaim } from '../keys/claim.ts'
import type { Services } from '../services.ts'

/** Where the API's operations are served: the specification's paths are under it. */
export const API_BASE = '/v1'

export type AppEnv = { Variables: { caller: Caller; claim: CallerClaim; services: Services } }
export type Api = OpenAPIHono<AppEnv>
