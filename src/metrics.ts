import { Counter, Gauge, Histogram, Registry } from 'prom-client'

/** What happened to an email: handed to the server, failed for good, or put back to wait. */
export type EmailOutcome = 'sent' | 'failed' | 'deferred'

/** The send path's one hook: an outcome, counted where it becomes known. */
export interface EmailMetrics {
  email(outcome: EmailOutcome, connectionId: number): void
}

/** What the database says of the queue and the connections, read when /metrics is scraped. */
export interface OperationalState {
  queued: number
  oldestQueuedSeconds: number
  connections: Record<'active' | 'disabled' | 'paused', number>
  batchesRunning: number
}

/**
 * This process's Prometheus metrics (served by GET /metrics). Counters and the latency
 * histogram are kept as things happen; the queue, connection and batch gauges are read from
 * the database at each scrape, so that every process reports the same, shared state.
 */
export class Metrics implements EmailMetrics {
  readonly registry = new Registry()
  private readonly requests = new Counter({
    name: 'mailroom_http_requests_total',
    help: 'API requests answered, by route and status',
    labelNames: ['method', 'route', 'status'],
    registers: [this.registry],
  })
  private readonly latency = new Histogram({
    name: 'mailroom_http_request_duration_seconds',
    help: 'Time to answer an API request, by route',
    labelNames: ['method', 'route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  })
  private readonly emails = new Counter({
    name: 'mailroom_emails_total',
    help: 'Emails by outcome (sent, failed, deferred) and connection id, counted by this process',
    labelNames: ['outcome', 'connection'],
    registers: [this.registry],
  })
  private readonly queued = new Gauge({
    name: 'mailroom_queue_depth',
    help: 'Queued emails (waiting to be sent or retried)',
    registers: [this.registry],
  })
  private readonly oldest = new Gauge({
    name: 'mailroom_queue_oldest_age_seconds',
    help: 'Age of the oldest queued email, 0 when none',
    registers: [this.registry],
  })
  private readonly connections = new Gauge({
    name: 'mailroom_connections',
    help: 'Connections by state',
    labelNames: ['state'],
    registers: [this.registry],
  })
  private readonly batches = new Gauge({
    name: 'mailroom_batches_running',
    help: 'Batches with recipients still to send',
    registers: [this.registry],
  })

  request(method: string, route: string, status: number | 'aborted', seconds: number): void {
    this.requests.inc({ method, route, status: String(status) })
    this.latency.observe({ method, route }, seconds)
  }

  email(outcome: EmailOutcome, connectionId: number): void {
    this.emails.inc({ outcome, connection: String(connectionId) })
  }

  /** The exposition text, with the gauges set from `state`. */
  async render(state: OperationalState): Promise<string> {
    this.queued.set(state.queued)
    this.oldest.set(state.oldestQueuedSeconds)
    for (const [name, count] of Object.entries(state.connections))
      this.connections.set({ state: name }, count)
    this.batches.set(state.batchesRunning)
    return this.registry.metrics()
  }
}
