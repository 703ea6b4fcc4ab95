import type { Session } from '../accounts/sessions.ts'
import type { Sql } from '../db/sql.ts'
import type { Services } from '../services.ts'
import type { Dashboard, DashboardContext } from './env.ts'
import { idParam } from './params.ts'

/** What a signed-in page works with: its account, the session and the services. */
export interface SignedIn {
  accountId: number
  session: Session
  services: Services
  sql: Sql
}

export function signedIn(c: DashboardContext): SignedIn {
  const session = c.get('session')
  const services = c.get('services')
  return { accountId: session.accountId, session, services, sql: services.sql }
}

type Page = (c: DashboardContext) => Response | Promise<Response>
type ItemPage<T> = (c: DashboardContext, item: T) => Response | Promise<Response>

/**
 * One kind of thing an account has (keys, connections, …): its list at `list`, each one at
 * `list/ID`, found by `find` among the account's own only (another account's is not found).
 */
export interface Resource<T, List extends string = string> {
  list: List
  /** One item's page; its actions are below it (`one(id)/delete`). */
  one(id: number): string
  find(c: DashboardContext, id: number): Promise<T>
}

export function resource<T, List extends string>(
  list: List,
  find: (c: DashboardContext, id: number) => Promise<T>,
): Resource<T, List> {
  return { list, one: (id) => `${list}/${id}`, find }
}

/**
 * A resource's routes, each handler at one item given the item its address names, once found:
 * `list` and `create` at the list, `detail` and `update` at one item, `view` (a page, such as
 * the confirmation before an action) and `action` at a path below it (`delete`,
 * `members/:member{[0-9]+}/delete`).
 */
export interface Routes<T> {
  list(handler: Page): void
  create(handler: Page): void
  detail(handler: ItemPage<T>): void
  update(handler: ItemPage<T>): void
  view(below: string, handler: ItemPage<T>): void
  action(below: string, handler: ItemPage<T>): void
}

export function routes<T>(app: Dashboard, resource: Resource<T>): Routes<T> {
  const item = `${resource.list}/:id{[0-9]+}`
  const found =
    (handler: ItemPage<T>): Page =>
    async (c) =>
      handler(c, await resource.find(c, idParam(c)))
  return {
    list: (handler) => void app.get(resource.list, handler),
    create: (handler) => void app.post(resource.list, handler),
    detail: (handler) => void app.get(item, found(handler)),
    update: (handler) => void app.post(item, found(handler)),
    view: (below, handler) => void app.get(`${item}/${below}`, found(handler)),
    action: (below, handler) => void app.post(`${item}/${below}`, found(handler)),
  }
}
