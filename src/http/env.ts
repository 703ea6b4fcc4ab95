import type { OpenAPIHono } from '@hono/zod-openapi'
import type { Caller } from '../keys/caller.ts'
import type { Services } from '../services.ts'

export type AppEnv = { Variables: { caller: Caller; services: Services } }
export type Api = OpenAPIHono<AppEnv>
