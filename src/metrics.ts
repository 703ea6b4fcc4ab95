import { Counter, Gauge, Histogram, Registry } from 'prom-client'

/** What happened to an email: handed to the server, failed for good, or put back to wait. */
export type EmailOutcome = 'sent' | 'failed' | 'deferred'

/** The send path's one hook: an outcome, counted where it becomes known. */
export interface EmailMetrics {
  email(outcome: EmailOutcome, connectionId: number): void
}

/** What became of a message submitted to the SMTP relay. */
export type RelayMessageOutcome = 'accepted' | 'refused' | 'too_big' | 'failed' | 'abandoned'

/** What a report read from a connection's mailbox said of a recipient (hard: it was suppressed). */
export type ReportOutcome = 'hard_bounce' | 'soft_bounce' | 'complaint'

/** What became of a message read from a connection's mailbox: handled, or left in the folder. */
export type MailboxMessageOutcome = 'handled' | 'unmatched' | 'other'

/** The mailbox reader's hooks, counted where each becomes known. */
export interface ReportMetrics {
  report(outcome: ReportOutcome, connectionId: number): void
  mailboxMessage(outcome: MailboxMessageOutcome, connectionId: number): void
  mailboxLoginFailure(connectionId: number): void
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
export class Metrics implements EmailMetrics, ReportMetrics {
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
  private readonly bounces = new Counter({
    name: 'mailroom_bounces_total',
    help: 'Bounced recipients read from connection mailboxes, by kind (hard: suppressed; soft) and connection id',
    labelNames: ['kind', 'connection'],
    registers: [this.registry],
  })
  private readonly complaints = new Counter({
    name: 'mailroom_complaints_total',
    help: 'Complaints read from connection mailboxes, by connection id',
    labelNames: ['connection'],
    registers: [this.registry],
  })
  private readonly mailboxMessages = new Counter({
    name: 'mailroom_mailbox_messages_total',
    help: 'Messages read from connection mailboxes, by outcome (handled, unmatched report, other mail) and connection id',
    labelNames: ['outcome', 'connection'],
    registers: [this.registry],
  })
  private readonly mailboxFailures = new Counter({
    name: 'mailroom_mailbox_login_failures_total',
    help: 'Readings of a connection mailbox that could not log in or open its folder, by connection id',
    labelNames: ['connection'],
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

  private readonly relaySessions = new Counter({
    name: 'mailroom_relay_sessions_total',
    help: 'SMTP relay sessions opened, by listener (smtp: STARTTLS, smtps: implicit TLS) and whether they were refused',
    labelNames: ['listener', 'refused'],
    registers: [this.registry],
  })
  private readonly relayAuthFailures = new Counter({
    name: 'mailroom_relay_auth_failures_total',
    help: 'SMTP relay AUTH attempts refused, by reason (invalid_key, throttled)',
    labelNames: ['reason'],
    registers: [this.registry],
  })
  private readonly relayMessages = new Counter({
    name: 'mailroom_relay_messages_total',
    help: 'Messages submitted to the SMTP relay, by outcome (accepted, refused, too_big, failed, abandoned)',
    labelNames: ['outcome'],
    registers: [this.registry],
  })
  /** Bytes of messages the relay holds while they arrive: back to 0 when no DATA is under way. */
  readonly relayBufferedBytes = new Gauge({
    name: 'mailroom_relay_buffered_bytes',
    help: 'Bytes of submitted messages the SMTP relay holds in memory while they arrive and are stored',
    registers: [this.registry],
  })

  relaySession(listener: 'smtp' | 'smtps', refused: boolean): void {
    this.relaySessions.inc({ listener, refused: String(refused) })
  }

  relayAuthFailure(reason: 'invalid_key' | 'throttled'): void {
    this.relayAuthFailures.inc({ reason })
  }

  relayMessage(outcome: RelayMessageOutcome): void {
    this.relayMessages.inc({ outcome })
  }

  request(method: string, route: string, status: number | 'aborted', seconds: number): void {
    this.requests.inc({ method, route, status: String(status) })
    this.latency.observe({ method, route }, seconds)
  }

  email(outcome: EmailOutcome, connectionId: number): void {
    this.emails.inc({ outcome, connection: String(connectionId) })
  }

  report(outcome: ReportOutcome, connectionId: number): void {
    const connection = String(connectionId)
    if (outcome === 'complaint') this.complaints.inc({ connection })
    else this.bounces.inc({ kind: outcome === 'hard_bounce' ? 'hard' : 'soft', connection })
  }

  mailboxMessage(outcome: MailboxMessageOutcome, connectionId: number): void {
    this.mailboxMessages.inc({ outcome, connection: String(connectionId) })
  }

  mailboxLoginFailure(connectionId: number): void {
    this.mailboxFailures.inc({ connection: String(connectionId) })
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
