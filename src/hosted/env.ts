import type { Context, Hono } from 'hono'
import type { Services } from '../services.ts'

export type HostedEnv = { Variables: { services: Services } }
export type Hosted = Hono<HostedEnv>
export type HostedContext = Context<HostedEnv>
