import http from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { createAccount } from '../../src/accounts/accounts.ts'
import { setPassword } from '../../src/accounts/passwords.ts'
import { startSession } from '../../src/accounts/sessions.ts'
import { createAudience } from '../../src/audiences/audiences.ts'
import { createForm } from '../../src/forms/forms.ts'
import { createKey } from '../../src/keys/keys.ts'
import { type Bench, type Figures, message, percentile, type Scenario } from '../support.ts'
import {
  call,
  cookieHeader,
  describe,
  fiveHundreds,
  formToken,
  hugeCsvFiles,
  hugeJsonBodies,
  inTurn,
  multipartFile,
  neverEndingBodies,
  type Outcome,
  outcome,
  type SlowBodies,
  wrongSignIn,
} from './hostile-attacks.ts'

/** Each phase's length at least; BENCH_HOSTILE_SECONDS shortens it when trying things out. */
const SECONDS = Number(process.env.BENCH_HOSTILE_SECONDS ?? 20)
/** The attacks are let go after this, whatever is still waiting for an answer. */
const ATTACKS_AT_MOST_MS = 120_000
/** The neighbour's ordinary traffic: clients each sending one /send after the other, a pause between. */
const NEIGHBOUR = { clients: 4, pauseMs: 25 }
const HEALTH_EVERY_MS = 20
const JSON_BODIES = { count: 12, atOnce: 4 }
const SLOW_BODIES = { count: 3000, addresses: 20, spreadMs: 5000, holdMs: 25_000 }
const WRONG_SIGN_INS = 30
const OWNER_PASSWORD = 'the neighbour owner’s password'
const TARGETS = { healthP99Ms: 100, healthMaxMs: 250, neighbourP99Ratio: 2, rssMiB: 400 }
/** `BENCH_HOSTILE_ATTACKS=3,4` runs only those of the four attacks: which one costs what. */
const ATTACKS = new Set((process.env.BENCH_HOSTILE_ATTACKS ?? '1,2,3,4').split(','))
const only = <T>(attack: string, value: T, none: T) => (ATTACKS.has(attack) ? value : none)

interface Traffic {
  health: number[]
  send: number[]
  health5xx: number
  send5xx: number
  /** Requests not answered 2xx, 5xx included. */
  failed: number
}

interface Phase {
  traffic: Traffic
  figures: Figures
}

interface Attacks {
  json: Outcome
  slow: SlowBodies
  csv: { name: string; outcome: Outcome }[]
  signIns: Outcome
  owner: { tries: number; ms: number; status: number }
}

/**
 * The `hostile tenant` row: ordinary traffic of one account (POST /send, 4 clients) and /health
 * probes, measured alone and then while other tenants attack the service together: (1) /send
 * bodies of 7 MB with 600,000 keys or a million `{}`, four at a time from a Free key; (2)
 * thousands of anonymous form submissions whose chunked body never ends; (3) a 500,000-line CSV
 * import and a million-column one in the dashboard; (4) 30 wrong sign-ins from 30 addresses,
 * with the neighbour's owner signing in meanwhile. Every attack is bounded in count and time
 * and comes from loopback addresses of its own (127.0.0.1 is the neighbour's), so that limits
 * per client address see the attackers as others.
 */
export const hostile: Scenario = {
  name: 'hostile',
  async run(bench: Bench) {
    const { sql } = bench.services
    const free = await createAccount(sql, { email: 'hostile-free@example.com', plan: 'free' })
    const { key: freeKey } = await createKey(sql, { accountId: free.id, name: 'hostile' })
    const form = await createForm(sql, free.id, { name: 'Hostile form' }, bench.url)
    const pro = await createAccount(sql, { email: 'hostile-pro@example.com', plan: 'pro' })
    const audience = await createAudience(sql, pro.id, { name: 'Hostile import' })
    const { token: session } = await startSession(sql, pro.id)
    await setPassword(sql, bench.accountId, OWNER_PASSWORD)
    const bodies = hugeJsonBodies()
    const files = hugeCsvFiles()

    const alone = await phase(bench, 'hostile tenant: neighbour alone', async () => {
      await sleep(SECONDS * 1000)
    })
    let attacks: Attacks | undefined
    const attacked = await phase(bench, 'hostile tenant: neighbour under attack', async () => {
      attacks = await attack(
        bench,
        { freeKey, formPath: `/forms/${form.public_id}`, session, audienceId: audience.id },
        bodies,
        files,
      )
    })
    return [
      { ...alone.figures, latencies: alone.traffic.send, paced: true },
      {
        ...attacked.figures,
        latencies: attacked.traffic.send,
        paced: true,
        note: report(alone, attacked, attacks as Attacks),
      },
    ]
  },
}

/** The neighbour's traffic and /health probes while `during` runs, for SECONDS at least. */
async function phase(bench: Bench, name: string, during: () => Promise<void>): Promise<Phase> {
  const traffic: Traffic = { health: [], send: [], health5xx: 0, send5xx: 0, failed: 0 }
  const agent = new http.Agent({ keepAlive: true, maxSockets: NEIGHBOUR.clients + 1 })
  let running = true
  let sent = 0
  const figures = await bench.timed(name, 1, async () => {
    const started = performance.now()
    const loops = [
      (async () => {
        while (running) {
          const answer = await call(`${bench.url}/health`, { agent, timeoutMs: 30_000 })
          traffic.health.push(answer.ms)
          if (answer.status >= 500) traffic.health5xx++
          if (answer.status !== 200) traffic.failed++
          await sleep(HEALTH_EVERY_MS)
        }
      })(),
      ...Array.from({ length: NEIGHBOUR.clients }, async () => {
        while (running) {
          const answer = await call(`${bench.url}/v1/send`, {
            method: 'POST',
            agent,
            timeoutMs: 30_000,
            headers: { authorization: `Bearer ${bench.key}`, 'content-type': 'application/json' },
            body: JSON.stringify(message(3_000_000 + sent++, bench.from)),
          })
          traffic.send.push(answer.ms)
          if (answer.status >= 500) traffic.send5xx++
          if (answer.status < 200 || answer.status >= 300) traffic.failed++
          await sleep(NEIGHBOUR.pauseMs)
        }
      }),
    ]
    await during()
    const left = SECONDS * 1000 - (performance.now() - started)
    if (left > 0) await sleep(left)
    running = false
    await Promise.all(loops)
  })
  agent.destroy()
  return { traffic, figures: { ...figures, count: traffic.send.length } }
}

interface Hostiles {
  freeKey: string
  formPath: string
  session: string
  audienceId: number
}

/** The four attacks together; resolves when each has its answers, or after ATTACKS_AT_MOST_MS. */
async function attack(
  bench: Bench,
  hostiles: Hostiles,
  bodies: Buffer[],
  files: { name: string; content: Buffer }[],
): Promise<Attacks> {
  const url = new URL(bench.url)
  const json = outcome()
  const signIns = outcome()
  const csv = files.map((file) => ({ name: file.name, outcome: outcome() }))
  let endSlow = () => {}
  const slowEnds = new Promise<void>((resolve) => {
    endSlow = resolve
  })
  const slow = neverEndingBodies(
    { host: url.hostname, port: Number(url.port), path: hostiles.formPath },
    only('2', SLOW_BODIES.count, 0),
    Array.from({ length: SLOW_BODIES.addresses }, (_, i) => `127.0.2.${i + 1}`),
    SLOW_BODIES.spreadMs,
    slowEnds,
  )
  const owner = { tries: 0, ms: 0, status: 0 }
  const bounded = Promise.all([
    inTurn(only('1', JSON_BODIES.count, 0), JSON_BODIES.atOnce, (i) =>
      call(
        `${bench.url}/v1/send`,
        {
          method: 'POST',
          localAddress: '127.0.3.1',
          headers: { authorization: `Bearer ${hostiles.freeKey}`, 'content-type': 'application/json' },
          body: bodies[i % bodies.length],
        },
        json,
      ),
    ),
    ...only('3', files, []).map(async (file, i) => {
      const cookie = `mailroom_session=${hostiles.session}`
      const path = `/dashboard/audiences/${hostiles.audienceId}`
      const page = await call(`${bench.url}${path}`, { localAddress: '127.0.4.1', headers: { cookie } })
      const { body, type } = multipartFile({ csrf: formToken(page) }, file.content)
      await call(
        `${bench.url}${path}/members/csv`,
        { method: 'POST', localAddress: '127.0.4.1', headers: { cookie, 'content-type': type }, body },
        csv[i]?.outcome,
      )
    }),
    ...Array.from({ length: only('4', WRONG_SIGN_INS, 0) }, (_, i) =>
      wrongSignIn(bench.url, `nobody${i}@example.com`, `127.0.5.${i + 1}`, signIns),
    ),
    ...only('4', [() => ownerSignsIn(bench.url, owner)], []).map((signIn) => signIn()),
  ])
  // The never-ending bodies are held past the service's deadline for a form's body (20 s and a
  // little), so that its cutting them is part of the attack, however soon the others end.
  const held = Promise.all([bounded, sleep(only('2', SLOW_BODIES.holdMs, 0))])
  await Promise.race([held, sleep(ATTACKS_AT_MOST_MS)])
  endSlow()
  return { json, slow: await slow, csv, signIns, owner }
}

/** The neighbour's owner signs in half a second into the attacks, again each second it is told to. */
async function ownerSignsIn(base: string, owner: Attacks['owner']): Promise<void> {
  await sleep(500)
  const started = performance.now()
  while (performance.now() - started < ATTACKS_AT_MOST_MS) {
    owner.tries++
    const page = await call(`${base}/dashboard/login`)
    const answer = await call(`${base}/dashboard/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader(page.cookies) },
      body: new URLSearchParams({
        csrf: formToken(page),
        email: 'bench@example.com',
        password: OWNER_PASSWORD,
        next: '',
      }).toString(),
    })
    owner.status = answer.status
    if (answer.status !== 429) break
    await sleep(1000)
  }
  owner.ms = performance.now() - started
}

/** The side-by-side table, and what each attack was answered. */
function report(alone: Phase, attacked: Phase, attacks: Attacks): string {
  const sorted = (ms: number[]) => [...ms].sort((a, b) => a - b)
  const p99 = (ms: number[]) => percentile(sorted(ms), 99)
  const max = (ms: number[]) => Math.max(0, ...ms)
  const attack5xx =
    fiveHundreds(attacks.json) +
    fiveHundreds(attacks.slow.answered) +
    fiveHundreds(attacks.signIns) +
    attacks.csv.reduce((sum, c) => sum + fiveHundreds(c.outcome), 0) +
    (attacks.owner.status >= 500 ? 1 : 0)
  const side = (f: (p: Phase) => number, digits = 1) => [alone, attacked].map((p) => f(p).toFixed(digits))
  const met = (ok: boolean) => (ok ? 'met' : 'MISSED')
  const rows: [string, string[], string][] = [
    [
      '/health p99 ms',
      side((p) => p99(p.traffic.health)),
      `< ${TARGETS.healthP99Ms}: ${met(p99(attacked.traffic.health) < TARGETS.healthP99Ms)}`,
    ],
    [
      '/health max ms',
      side((p) => max(p.traffic.health)),
      `< ${TARGETS.healthMaxMs}: ${met(max(attacked.traffic.health) < TARGETS.healthMaxMs)}`,
    ],
    [
      'neighbour /send p99 ms',
      side((p) => p99(p.traffic.send)),
      `≤ ${TARGETS.neighbourP99Ratio}× alone: ${met(p99(attacked.traffic.send) <= TARGETS.neighbourP99Ratio * p99(alone.traffic.send))}`,
    ],
    [
      'peak RSS MiB',
      side((p) => p.figures.peakRssMiB ?? 0, 0),
      `< ${TARGETS.rssMiB}: ${met((attacked.figures.peakRssMiB ?? 0) < TARGETS.rssMiB)}`,
    ],
    [
      '5xx (neighbour, /health)',
      side((p) => p.traffic.send5xx + p.traffic.health5xx, 0),
      `none: ${met(attacked.traffic.send5xx + attacked.traffic.health5xx === 0)}`,
    ],
    ['5xx (attacks)', ['-', String(attack5xx)], `none: ${met(attack5xx === 0)}`],
    [
      'neighbour requests (failed)',
      side((p) => p.traffic.send.length + p.traffic.health.length, 0).map(
        (n, i) => `${n} (${[alone, attacked][i]?.traffic.failed})`,
      ),
      '',
    ],
  ]
  const table = rows.map(
    ([name, [a = '', b = ''], target]) => `${name.padEnd(28)}${a.padStart(12)}${b.padStart(16)}   ${target}`,
  )
  const slow = attacks.slow
  return [
    'the same traffic alone and under attack',
    `${''.padEnd(28)}${'alone'.padStart(12)}${'under attack'.padStart(16)}   target`,
    ...table,
    `(1) /send, 7 MB of 600,000 keys or a million {}, ${JSON_BODIES.atOnce} at a time: ${describe(attacks.json)}`,
    `(2) ${slow.opened} never-ending form bodies from ${SLOW_BODIES.addresses} addresses: ${slow.closedByService} closed by the service (${describe(slow.answered)}), ${slow.heldToTheEnd} still open when let go`,
    ...attacks.csv.map((c) => `(3) CSV import of ${c.name}: ${describe(c.outcome)}`),
    `(4) ${WRONG_SIGN_INS} wrong sign-ins from ${WRONG_SIGN_INS} addresses: ${describe(attacks.signIns)}`,
    `    the neighbour's owner signing in meanwhile: answered ${attacks.owner.status} after ${(attacks.owner.ms / 1000).toFixed(1)} s, in ${attacks.owner.tries} tries`,
  ].join('\n  ')
}
