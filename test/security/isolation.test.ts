/**
 * One account can neither read nor change another's data, through any API
 * operation, dashboard page or action, or hosted page.
 *
 * The walk is driven by the contract and the route tables, not by a list kept by hand: every
 * operation of openapi/openapi.yaml and every route of the dashboard and of the hosted pages
 * (`app.routes`) must have an entry in the tables below, or the first test fails naming it
 * ("not walked: GET /emails/{id}"). An entry says how to build the request from the other
 * account's IDs (`them`) and the caller's own (`me`), and what the contract answers:
 * - the API: 403 `{error: "Access denied"}` for another's audience or template, 404
 *   `BATCH_NOT_FOUND` for another's batch, the connection errors for another's sending address
 *   (the specification's authentication rules);
 * - the dashboard: 404 for another account's ID (docs/dashboard.md);
 * - hosted pages (public): 404 for anything that is not a live public address.
 * Each request is then made by the owner itself (the control): it must succeed, so an entry
 * cannot pass by missing its route. Before the controls, the owner's rows (every table, found
 * through the schema's foreign keys) must be exactly as before the walk, and no row of the
 * caller may point at one of the owner's.
 */

import { beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { waitForBatchEnd } from '../support/batches.ts'
import { textOf } from '../support/dashboard.ts'
import { crossLinks, type Ownership, ownershipOf, rowsOf } from '../support/ownership.ts'
import { API } from './isolation/api.ts'
import { DASHBOARD } from './isolation/dashboard.ts'
import { HOSTED } from './isolation/hosted.ts'
import type { Probe } from './isolation/probes.ts'
import { MARK, type Tenant, tenant } from './isolation/tenant.ts'
import {
  byPhase,
  check,
  describeStep,
  operationsOfContract,
  routeTables,
  send,
  stepsOf,
  unwalked,
} from './isolation/walk.ts'

const app = useTestApp()

let victim: Tenant
let intruder: Tenant
let ownership: Ownership

beforeAll(async () => {
  victim = await tenant(app, MARK)
  intruder = await tenant(app, 'intr')
  await app.worker()
  for (const t of [victim, intruder]) {
    for (const id of [t.batchId, t.spareBatchId]) await waitForBatchEnd(app, t.key, id)
  }
  // Nothing of the owner's moves while the walk looks.
  await app.stopWorkers()
  ownership = await ownershipOf(app.services.sql)
}, 120_000)

describe('the isolation walk', () => {
  it('walks every operation of the contract and every route of the dashboard and hosted pages', () => {
    const { dashboard, hosted } = routeTables(app)
    expect([
      ...unwalked(operationsOfContract(), API),
      ...unwalked(dashboard, DASHBOARD),
      ...unwalked(hosted, HOSTED),
    ]).toEqual([])
  })

  it('knows which account every row of the database belongs to', () => {
    // Counters keyed by a hash of an address or account, and worker heartbeats: no account's data.
    expect(ownership.unowned).toEqual([
      'mailroom_migrations',
      'public_submissions',
      'sign_in_attempts',
      'worker_processes',
    ])
  })

  it('live public pages show only what their owner made public', async () => {
    const page = await app.requestRoot(`/signup/${victim.slug}`)
    const html = await page.text()
    expect(page.status).toBe(200)
    expect(textOf(html)).toContain('Join our list')
    const form = await app.requestRoot(`/forms/${victim.formPublicId}`)
    expect(form.status).toBe(200)
    for (const text of [html, await form.text()]) {
      for (const secret of [victim.email, victim.from, ...victim.memberEmails, `${MARK} audience`]) {
        expect(text).not.toContain(secret)
      }
    }
  })

  // Some three hundred requests in turn: on a shared machine they may outlast the default timeout.
  it('another account reads and changes nothing of the owner’s, and is answered as the contract says', async () => {
    const steps = byPhase([
      ...stepsOf('api', API),
      ...stepsOf('dashboard', DASHBOARD),
      ...stepsOf('hosted', HOSTED),
    ])
    const before = await rowsOf(app.services.sql, ownership, victim.accountId)
    const privateOfVictim = [
      victim.email,
      victim.from,
      ...victim.memberEmails,
      `${MARK} audience`,
      `${MARK} closed`,
    ]
    for (const step of steps) {
      const reply = await send(app, step, intruder, step.probe, victim, intruder)
      check(step, reply, step.probe.answer)
      if (step.surface === 'hosted') {
        for (const text of privateOfVictim) expect(reply.text, describeStep(step)).not.toContain(text)
      } else {
        const shown = reply.echoes.reduce((text, echo) => text.replaceAll(echo, ''), reply.text)
        expect(shown, `${describeStep(step)} shows the owner's data`).not.toContain(MARK)
      }
    }
    expect(await rowsOf(app.services.sql, ownership, victim.accountId)).toEqual(before)
    expect(await crossLinks(app.services.sql, ownership, intruder.accountId, victim.accountId)).toEqual([])
    expect(await crossLinks(app.services.sql, ownership, victim.accountId, intruder.accountId)).toEqual([])

    // The controls: the same requests made by the owner on its own IDs succeed, so every entry
    // reached its route and a real resource.
    for (const step of steps) {
      const control = step.probe.control
      if (control === false) continue
      const named = control?.(victim)
      const parts: Pick<Probe, 'params' | 'body'> = named
        ? {
            params: () => named.params ?? {},
            ...(named.body === undefined ? {} : { body: () => named.body }),
          }
        : step.probe
      const reply = await send(app, step, victim, parts, victim, victim)
      expect(reply.status, `control of ${describeStep(step)}: ${reply.text.slice(0, 300)}`).toBeLessThan(400)
    }
  }, 180_000)
})
