import type { Context, Hono } from 'hono'
import type { Session } from '../accounts/sessions.ts'
import type { Services } from '../services.ts'

export type DashboardEnv = {
  Variables: {
    services: Services
    /** The signed-in session (every page but the sign-in page). */
    session: Session
    /** The session's form token, put in every form the page shows. */
    formToken: string
  }
}

export type Dashboard = Hono<DashboardEnv>
export type DashboardContext = Context<DashboardEnv>
