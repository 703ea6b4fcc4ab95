/**
 * The isolation walk's steps: which operations and routes exist, the request each entry makes as
 * a given caller, and the check of its answer.
 */
import { readFileSync } from 'node:fs'
import { expect } from 'vitest'
import { parse } from 'yaml'
import { createDashboard } from '../../../src/dashboard/app.ts'
import { createHosted } from '../../../src/hosted/app.ts'
import type { RequestInit, TestApp } from '../../support/app.ts'
import { client, textOf } from '../../support/dashboard.ts'
import { type Answer, OWN, type Params, type Probe } from './probes.ts'
import { MARK, type Tenant } from './tenant.ts'

export type Surface = 'api' | 'dashboard' | 'hosted'

export interface Step {
  surface: Surface
  method: string
  template: string
  probe: Probe
}

/** "GET /batches/{id}" for the contract, "POST /dashboard/keys/:id/rotate" for a route table. */
export function operationsOfContract(): string[] {
  const document = parse(readFileSync(new URL('../../../openapi/openapi.yaml', import.meta.url), 'utf8')) as {
    paths: Record<string, Record<string, unknown>>
  }
  const methods = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options']
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((m) => methods.includes(m))
      .map((m) => `${m.toUpperCase()} ${path}`),
  )
}

/** Routes with a handler of their own (`app.use` middleware is registered as ALL), regexes dropped. */
function operationsOfRoutes(routes: { method: string; path: string }[]): string[] {
  const named = routes
    .filter((r) => r.method !== 'ALL')
    .map((r) => `${r.method} ${r.path.replace(/(:[A-Za-z]+)\{[^}]*\}/g, '$1')}`)
  return [...new Set(named)]
}

/** The route tables, read from apps made on a stand-in (routes are registered without services). */
export function routeTables(app: TestApp): { dashboard: string[]; hosted: string[] } {
  const services = app.services
  return {
    dashboard: operationsOfRoutes(createDashboard(services).routes),
    hosted: operationsOfRoutes(createHosted(services).routes),
  }
}

export function unwalked(operations: string[], table: Record<string, Probe[]>): string[] {
  return [
    ...operations.filter((op) => !table[op]?.length).map((op) => `not walked: ${op}`),
    ...Object.keys(table)
      .filter((op) => !operations.includes(op))
      .map((op) => `walked but gone: ${op}`),
  ]
}

export function stepsOf(surface: Surface, table: Record<string, Probe[]>): Step[] {
  return Object.entries(table).flatMap(([operation, probes]) => {
    const [method = '', template = ''] = operation.split(' ')
    return probes.map((p) => ({ surface, method, template, probe: p }))
  })
}

function fill(template: string, params: Params = {}): string {
  return template.replace(/\{(\w+)\}|:(\w+)/g, (whole, a: string | undefined, b: string | undefined) => {
    const name = a ?? b ?? ''
    if (!(name in params)) throw new Error(`no value for ${whole} in ${template}`)
    return encodeURIComponent(String(params[name]))
  })
}

export interface Reply {
  status: number
  text: string
  /** The words of the request that carry MARK: the caller may be told back what it sent. */
  echoes: string[]
}

/** Makes the step's request as `caller` (its key, its session, or nobody for hosted pages). */
export async function send(
  app: TestApp,
  step: Step,
  caller: Tenant,
  parts: Pick<Probe, 'params' | 'query' | 'body' | 'headers'>,
  them: Tenant,
  me: Tenant,
): Promise<Reply> {
  const query = parts.query
    ? `?${new URLSearchParams(Object.entries(parts.query(them, me)).map(([k, v]) => [k, String(v)]))}`
    : ''
  const path = fill(step.template, parts.params?.(them, me)) + query
  const body = parts.body?.(them, me)
  const headers = parts.headers?.(them, me) ?? {}
  const sentText = `${path} ${body instanceof FormData ? '' : JSON.stringify(body ?? '')} ${JSON.stringify(headers)}`
  const echoes = sentText.match(new RegExp(`[\\w.@+-]*${MARK}[\\w.@+-]*`, 'g')) ?? []
  if (step.surface === 'dashboard') {
    let browser = caller.browser
    // A page first, as a browser shows the form it posts (and its form token, which a password
    // change renews).
    if (step.probe.signedOut) browser = client(app)
    if (step.method !== 'GET')
      await browser.get(step.probe.signedOut ? '/dashboard/login' : '/dashboard/account')
    const page =
      step.method === 'GET'
        ? await browser.get(path, headers)
        : await browser.post(path, (body ?? {}) as Record<string, string> | FormData, { headers })
    return { status: page.status, text: page.html, echoes }
  }
  const init: RequestInit = { method: step.method, headers, ...(body === undefined ? {} : { body }) }
  if (step.surface === 'api') {
    const res = await app.request(path, { ...init, key: caller.key })
    return { status: res.status, text: await res.text(), echoes }
  }
  const form = body === undefined ? undefined : new URLSearchParams(body as Record<string, string>)
  const res = await app.requestRoot(path, { ...init, ...(form ? { body: form } : {}) })
  return { status: res.status, text: await res.text(), echoes }
}

export function byPhase(steps: Step[]): Step[] {
  return [...steps].sort((a, b) => (a.probe.phase ?? 0) - (b.probe.phase ?? 0))
}

export function describeStep(step: Step): string {
  return `${step.surface} ${step.method} ${step.template}`
}

/** The page or body text, checked against the answer the entry names. */
export function check(step: Step, reply: Reply, answer: Answer | typeof OWN): void {
  const what = describeStep(step)
  if (answer === OWN) {
    expect(reply.status, `${what}: ${reply.text.slice(0, 300)}`).toBeLessThan(400)
    return
  }
  expect([what, reply.status], reply.text.slice(0, 500)).toEqual([what, answer.status])
  if (answer.body !== undefined) expect(JSON.parse(reply.text), what).toEqual(answer.body)
  if (answer.text !== undefined) expect(textOf(reply.text), what).toContain(answer.text)
}
