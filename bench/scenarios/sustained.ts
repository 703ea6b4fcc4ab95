import { readFile } from 'node:fs/promises'
import http from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { startSession } from '../../src/accounts/sessions.ts'
import { createForm } from '../../src/forms/forms.ts'
import { addresses, type Bench, type Figures, message, type Scenario } from '../support.ts'

/** The length of the run; BENCH_SUSTAINED_SECONDS shortens it when trying things out. */
const SECONDS = Number(process.env.BENCH_SUSTAINED_SECONDS ?? 60)
const BATCH_RECIPIENTS = 1000
/** Clients of each kind, each making one request after the other (16 in all, the bench's default). */
const CLIENTS = { send: 6, enqueue: 5, form: 3, dashboard: 2 }
/**
 * Queued mail (accepted, not yet at the sink) above which the enqueue and form clients hold off:
 * the service accepts far faster than one connection delivers, and an unbounded backlog would
 * measure nothing but its own drain.
 */
const BACKLOG_CAP = 2000
/** Forms submitted to, and loopback addresses submitted from: each pair takes 10 an hour. */
const FORMS = 20
const CLIENT_ADDRESSES = 250
const SUBMISSIONS_PER_HOUR = 10
const RSS_EVERY_MS = 1000

interface Kind {
  name: string
  latencies: number[]
  errors: number
  firstError?: string
}

/**
 * A sustained run of mixed traffic against the one connection. For SECONDS, clients
 * of each kind make requests one after the other: POST /send, POST /enqueue, hosted form
 * submissions (urlencoded, as a browser posts them, from many loopback addresses so that the
 * per-address limit is not what is measured) and a signed-in owner reading the dashboard's outbox
 * (the newest page, then the older one it links to, in turn); one 1000-recipient POST /send/batch goes in at the
 * start. One row per kind (requests per second, latencies), then a row of what reached the sink
 * during the window, with the service's peak RSS and CPU per message (the drain of the backlog
 * left at the end included). Errors, the backlog and its drain, and the service's RSS over the
 * run are printed under the table. Registered last in index.ts: its backlog is drained before
 * it returns, but nothing it leaves (its forms, 4000 outbox records) should touch another row.
 */
export const sustained: Scenario = {
  name: 'sustained',
  async run(bench: Bench) {
    const forms = await Promise.all(
      Array.from({ length: FORMS }, (_, i) =>
        createForm(bench.services.sql, bench.accountId, { name: `Bench form ${i}` }, bench.url),
      ),
    )
    const { token } = await startSession(bench.services.sql, bench.accountId)
    const kinds = kindsOfTraffic()
    const atStart = bench.sink.messages.length
    const delivered = () => bench.sink.messages.length - atStart
    let accepted = 0
    const accept = (count: number) => () => {
      accepted += count
    }
    const backlog = () => accepted - delivered()

    let windowSeconds = 0
    let deliveredInWindow = 0
    let drainSeconds = 0
    let samples: RssSample[] = []
    // Counted as one message: CPU per message is rescaled below, once the count is known.
    const whole = await bench.timed('sustained', 1, async () => {
      const rss = sampleRss(bench.servicePid)
      const started = performance.now()
      const end = started + SECONDS * 1000
      const running = () => performance.now() < end
      const whenRoom = async () => {
        while (backlog() > BACKLOG_CAP && running()) await sleep(20)
      }
      await runClients({ bench, kinds, forms, token, running, accept, whenRoom })
      windowSeconds = (performance.now() - started) / 1000
      deliveredInWindow = delivered()
      samples = await rss.stop()
      const drainStarted = performance.now()
      await bench.sink.waitForMessages(atStart + accepted, 600_000)
      drainSeconds = (performance.now() - drainStarted) / 1000
    })

    const rows: Figures[] = Object.values(kinds).map((k) => ({
      name: `sustained ${SECONDS} s: ${k.name}`,
      count: k.latencies.length,
      seconds: windowSeconds,
      latencies: k.latencies,
    }))
    const total = delivered()
    const perMessage = (ms: number) => ms / total
    rows.push({
      ...whole,
      name: `sustained ${SECONDS} s: delivered at the sink`,
      count: deliveredInWindow,
      seconds: windowSeconds,
      ...(whole.cpuMs && {
        cpuMs: {
          service: perMessage(whole.cpuMs.service),
          postgres: perMessage(whole.cpuMs.postgres),
          bench: perMessage(whole.cpuMs.bench),
        },
      }),
      note: summary(Object.values(kinds), {
        windowSeconds,
        deliveredInWindow,
        backlog: total - deliveredInWindow,
        drainSeconds,
        samples,
        peakRssMiB: whole.peakRssMiB,
      }),
    })
    return rows
  },
}

function kindsOfTraffic() {
  return {
    send: kind('POST /send'),
    enqueue: kind('POST /enqueue'),
    batch: kind(`POST /send/batch ×${BATCH_RECIPIENTS}`),
    form: kind('POST /forms/{id}'),
    newest: kind('GET /dashboard/outbox'),
    older: kind('GET /dashboard/outbox?before='),
  }
}

interface Traffic {
  bench: Bench
  kinds: ReturnType<typeof kindsOfTraffic>
  forms: { public_id: string }[]
  /** The dashboard session's token. */
  token: string
  running: () => boolean
  /** Counts `count` messages accepted once a request succeeds. */
  accept: (count: number) => () => void
  /** Waits until the backlog is below its cap. */
  whenRoom: () => Promise<void>
}

/**
 * The one batch and the clients of every kind, each making one request after the other while
 * the run lasts.
 */
async function runClients({ bench, kinds, forms, token, running, accept, whenRoom }: Traffic): Promise<void> {
  const clients = (count: number, one: () => Promise<void>) =>
    Array.from({ length: count }, async () => {
      while (running()) await one()
    })
  const pageAgent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS.dashboard })
  let messages = 0
  let submission = 0
  await Promise.all([
    timedRequest(kinds.batch, () =>
      bench
        .post('/send/batch', {
          from: bench.from,
          template: { subject: 'Sustained {{first_name}}', text_body: 'Hello from the bench' },
          recipients: addresses(BATCH_RECIPIENTS, 'sustained'),
        })
        .then(accept(BATCH_RECIPIENTS)),
    ),
    ...clients(CLIENTS.send, () =>
      timedRequest(kinds.send, () => bench.post('/send', message(messages++, bench.from)).then(accept(1))),
    ),
    ...clients(CLIENTS.enqueue, async () => {
      await whenRoom()
      await timedRequest(kinds.enqueue, () =>
        bench.post('/enqueue', message(messages++, bench.from)).then(accept(1)),
      )
    }),
    ...clients(CLIENTS.form, async () => {
      await whenRoom()
      // Each form takes SUBMISSIONS_PER_HOUR from an address: move on to the next pair.
      const pair = Math.floor(submission++ / SUBMISSIONS_PER_HOUR)
      const form = forms[pair % FORMS]
      const from = `127.0.0.${2 + (Math.floor(pair / FORMS) % CLIENT_ADDRESSES)}`
      await timedRequest(kinds.form, () =>
        call(`${bench.url}/forms/${form?.public_id}`, {
          method: 'POST',
          localAddress: from,
          body: new URLSearchParams({
            name: 'Bench',
            email: `visitor${pair}@example.com`,
            message: 'Hello from the sustained run',
          }).toString(),
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }).then(accept(1)),
      )
    }),
    ...Array.from({ length: CLIENTS.dashboard }, async () => {
      // The newest page, then the next older one (the link the page offers), in turn.
      let older: string | undefined
      while (running()) {
        await timedRequest(older ? kinds.older : kinds.newest, async () => {
          const html = await call(`${bench.url}${older ?? '/dashboard/outbox'}`, {
            agent: pageAgent,
            headers: { cookie: `mailroom_session=${token}` },
          })
          older = older ? undefined : /href="(\/dashboard\/outbox\?before=\d+)"/.exec(html)?.[1]
        })
      }
    }),
  ])
  pageAgent.destroy()
}

function kind(name: string): Kind {
  return { name, latencies: [], errors: 0 }
}

/** Runs one request of `k`, adding its latency, or counting its failure. */
async function timedRequest(k: Kind, request: () => Promise<unknown>): Promise<void> {
  const started = performance.now()
  try {
    await request()
    k.latencies.push(performance.now() - started)
  } catch (error) {
    k.errors++
    k.firstError ??= error instanceof Error ? error.message : String(error)
  }
}

interface CallOptions {
  method?: string
  headers?: Record<string, string>
  body?: string
  agent?: http.Agent
  /** The address the request comes from (a fresh connection, as a new visitor's). */
  localAddress?: string
}

/** A request outside the API (pages): resolves to the body; rejects on anything but a 2xx. */
function call(url: string, options: CallOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const { body, agent, localAddress, method = 'GET', headers = {} } = options
    const request = http.request(
      url,
      {
        method,
        headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
        ...(agent ? { agent } : { agent: false }),
        ...(localAddress ? { localAddress } : {}),
      },
      (response) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('error', reject)
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString()
          const status = response.statusCode ?? 0
          // A 303 would be the sign-in page or a refused form: not what was asked for.
          if (status < 200 || status >= 300)
            reject(new Error(`${method} ${new URL(url).pathname} answered ${status}`))
          else resolve(text)
        })
      },
    )
    request.on('error', reject)
    request.end(body)
  })
}

interface RssSample {
  atSeconds: number
  mib: number
}

/** The service's resident memory (VmRSS) every RSS_EVERY_MS: how it moves over the run. */
function sampleRss(pid: number): { stop(): Promise<RssSample[]> } {
  const samples: RssSample[] = []
  const started = performance.now()
  let running = true
  const loop = (async () => {
    while (running) {
      const mib = await rssMiB(pid)
      if (mib !== undefined) samples.push({ atSeconds: (performance.now() - started) / 1000, mib })
      await sleep(RSS_EVERY_MS)
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      return samples
    },
  }
}

async function rssMiB(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]
  return kb === undefined ? undefined : Number(kb) / 1024
}

interface Totals {
  windowSeconds: number
  deliveredInWindow: number
  backlog: number
  drainSeconds: number
  samples: RssSample[]
  peakRssMiB: number | undefined
}

/** What fits no column: requests and errors per kind, the backlog, memory over time. */
function summary(kinds: Kind[], totals: Totals): string {
  const perKind = kinds.map((k) => {
    const failed = k.errors ? ` (the first: ${k.firstError})` : ''
    return `${k.name}: ${k.latencies.length + k.errors} requests, ${k.errors} errors${failed}`
  })
  // The RSS at each tenth of the window: growth that does not level off is a leak.
  const { samples } = totals
  const course = Array.from({ length: 11 }, (_, i) => samples[Math.round((i / 10) * (samples.length - 1))])
    .filter((sample) => sample !== undefined)
    .map((sample) => `${sample.atSeconds.toFixed(0)} s ${sample.mib.toFixed(0)}`)
  return [
    'requests and errors per kind, the backlog, the memory',
    ...perKind,
    `${totals.deliveredInWindow} emails reached the sink in ${totals.windowSeconds.toFixed(1)} s ` +
      `(${(totals.deliveredInWindow / totals.windowSeconds).toFixed(0)}/s); ${totals.backlog} were still queued ` +
      `at the end and reached it ${totals.drainSeconds.toFixed(1)} s later`,
    `service RSS: peak ${totals.peakRssMiB?.toFixed(0) ?? '-'} MiB (VmHWM over the run and the drain); ` +
      `MiB over the window: ${course.join(', ')}`,
  ].join('\n  ')
}
