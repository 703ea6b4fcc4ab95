import type { OpenAPIHono } from '@hono/zod-openapi'
import type { ValidationIssue } from '../app-error.ts'
import type { RequestCaller } from '../fast-path/caller-cache.ts'
import type { Caller } from '../keys/caller.ts'
import type { Services } from '../services.ts'

/** Where the API's operations are served: the specification's paths are under it. */
export const API_BASE = '/v1'

export type AppEnv = {
  Variables: {
    caller: Caller
    requestCaller: RequestCaller
    services: Services
    /** The text PostgreSQL cannot store in the JSON body as sent, once it was read (json-body.ts). */
    unstorable?: ValidationIssue[]
  }
}
export type Api = OpenAPIHono<AppEnv>
