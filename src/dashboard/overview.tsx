import {
  accountOverview,
  COMPLAINT_LINE,
  type QuotaUse,
  RATE_DAYS,
  type ReportRates,
} from '../accounts/overview.ts'
import type { DayActivity } from '../db/outbox-types.ts'
import { counted } from '../wording.ts'
import type { Dashboard } from './env.ts'
import { page, Table, When } from './layout.tsx'
import { signedIn } from './resource.ts'

/** GET /dashboard: plan, today's sends against the daily limit, quotas, the last 30 days. */
export function registerOverview(app: Dashboard): void {
  app.get('/dashboard', async (c) => {
    const { sql, accountId, session } = signedIn(c)
    const overview = await accountOverview(sql, accountId, session.plan)
    return page(
      c,
      { title: 'Overview', section: '/dashboard' },
      <>
        <section class="grid stats">
          <article>
            <header>Plan</header>
            <p class="figure">{overview.plan === 'pro' ? 'Pro' : 'Free'}</p>
          </article>
          <article>
            <header>Sent today</header>
            {overview.dailyLimit ? (
              <>
                <p class="figure">
                  {overview.dailyLimit.used} <small>of {overview.dailyLimit.limit}</small>
                </p>
                <progress value={overview.dailyLimit.used} max={overview.dailyLimit.limit} />
                <small>The Free plan's daily limit, reset at 00:00 UTC.</small>
              </>
            ) : (
              <>
                <p class="figure">{overview.sentToday}</p>
                <small>No daily limit on the Pro plan.</small>
              </>
            )}
          </article>
        </section>
        <section>
          <h2>Connection quotas</h2>
          {overview.connections.length === 0 ? (
            <p>
              No connection yet. <a href="/dashboard/connections">Add the SMTP login</a> you send through.
            </p>
          ) : (
            <QuotaTable connections={overview.connections} />
          )}
        </section>
        {overview.rates.length ? (
          <section>
            <h2>Bounces and complaints, the last {RATE_DAYS} days</h2>
            <RatesTable rates={overview.rates} />
          </section>
        ) : null}
        <section>
          <h2>The last 30 days</h2>
          <ActivityChart days={overview.days} />
        </section>
      </>,
    )
  })
}

/** Two columns, the window's end under its use, so that a phone shows the table whole. */
function QuotaTable(props: { connections: QuotaUse[] }) {
  return (
    <Table head={['Connection', 'Used in this window']}>
      {props.connections.map((c) => (
        <tr>
          <td>
            <div class="lead-address">{c.from}</div>
          </td>
          <td>
            {c.quota === null ? (
              <span class="muted">No quota</span>
            ) : (
              <>
                {c.used} of {c.quota} per {c.quota_period}
                <progress value={c.used} max={c.quota} />
                <small>
                  the window ends <When at={c.resets_at} />
                </small>
              </>
            )}
          </td>
        </tr>
      ))}
    </Table>
  )
}

/** The 0.3 % line, as the page says it. */
const LINE_TEXT = `${(COMPLAINT_LINE.complaints / COMPLAINT_LINE.per) * 100} %`

/**
 * `n` of `total` as a percentage to two decimals, rounded down (in whole numbers, so exactly), so
 * that a rate just under the line never reads as on it; a dash when nothing was sent.
 */
function percent(n: number, total: number): string {
  if (total === 0) return '—'
  if (n === 0) return '0 %'
  const hundredths = Math.floor((n * 10_000) / total)
  return `${Math.floor(hundredths / 100)}.${String(hundredths % 100).padStart(2, '0')} %`
}

/**
 * Each connection's bounce and complaint rates, the complaint rate against the 0.3 % line; two
 * columns, the rates one under the other, so that a phone shows the table whole.
 */
function RatesTable(props: { rates: ReportRates[] }) {
  return (
    <>
      <p>
        <small>
          Of the recipients each connection's server answered for good in the last {RATE_DAYS} days (accepted
          or refused): bounces are those whose mailbox does not exist, said at RCPT or in a bounce report read
          from the connection's mailbox; complaints are complaint reports. Gmail and Yahoo ask senders to keep
          complaints under {LINE_TEXT}.
        </small>
      </p>
      <Table head={['Connection', 'Rates']}>
        {props.rates.map((r) => (
          <tr>
            <td>
              <div class="lead-address">{r.from}</div>
              <small class="muted">{counted(r.sentTo, 'recipient')} sent to</small>
            </td>
            <td class="rates">
              <p>
                Bounce rate <strong>{percent(r.bounced, r.sentTo)}</strong>
                <small class="muted">{counted(r.bounced, 'bounce')}</small>
              </p>
              <p>
                Complaint rate <strong>{percent(r.complained, r.sentTo)}</strong>{' '}
                {r.overComplaintLine ? (
                  <mark class="tag bad">{`at or above the ${LINE_TEXT} line`}</mark>
                ) : null}
                {r.sentTo ? (
                  <ComplaintScale rate={r.complained / r.sentTo} over={r.overComplaintLine} />
                ) : null}
                <small class="muted">{counted(r.complained, 'complaint')}</small>
              </p>
            </td>
          </tr>
        ))}
      </Table>
    </>
  )
}

/** The complaint rate on a scale of twice the line, the line drawn across it. */
function ComplaintScale(props: { rate: number; over: boolean }) {
  const line = COMPLAINT_LINE.complaints / COMPLAINT_LINE.per
  const width = Math.min(props.rate / (2 * line), 1) * 100
  return (
    <svg class="complaint-scale" viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true">
      <rect x="0" y="2" width="100" height="6" class="track" />
      <rect x="0" y="2" width={width} height="6" class={props.over ? 'over' : 'under'} />
      <line x1="50" y1="0" x2="50" y2="10" class="line" />
    </svg>
  )
}

const CHART = { width: 600, height: 160, gap: 2 }

/** A round maximum for the chart's scale: 1, 2 or 5 times a power of ten. */
function scaleTop(max: number): number {
  if (max <= 0) return 1
  const power = 10 ** Math.floor(Math.log10(max))
  return ([1, 2, 5, 10].find((step) => step * power >= max) ?? 10) * power
}

/** Sent and failed mail per day, drawn on the server as SVG; the same figures as a table beside it. */
function ActivityChart(props: { days: DayActivity[] }) {
  const { days } = props
  const top = scaleTop(Math.max(0, ...days.map((d) => d.sent + d.failed)))
  const slot = CHART.width / Math.max(days.length, 1)
  const height = (n: number) => (n / top) * CHART.height
  const sent = days.reduce((sum, d) => sum + d.sent, 0)
  const failed = days.reduce((sum, d) => sum + d.failed, 0)
  return (
    <figure class="chart">
      <svg
        viewBox={`0 0 ${CHART.width} ${CHART.height}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`${sent} sent and ${failed} failed in the last ${days.length} days`}
      >
        <line x1="0" y1={CHART.height - 0.5} x2={CHART.width} y2={CHART.height - 0.5} class="axis" />
        {days.map((d, i) => {
          const x = i * slot + CHART.gap / 2
          const width = slot - CHART.gap
          const sentHeight = height(d.sent)
          const failedHeight = height(d.failed)
          return (
            <g>
              <title>{`${d.day}: ${d.sent} sent, ${d.failed} failed`}</title>
              <rect x={x} width={width} y={CHART.height - sentHeight} height={sentHeight} class="sent" />
              <rect
                x={x}
                width={width}
                y={CHART.height - sentHeight - failedHeight}
                height={failedHeight}
                class="failed"
              />
            </g>
          )
        })}
      </svg>
      <figcaption class="chart-axis">
        <span>{days[0]?.day}</span>
        <span>
          <span class="key sent" /> {sent} sent <span class="key failed" /> {failed} failed · scale 0–{top} a
          day
        </span>
        <span>{days.at(-1)?.day}</span>
      </figcaption>
      <details>
        <summary>The figures, day by day</summary>
        <div class="overflow-auto">
          <table class="striped">
            <thead>
              <tr>
                <th scope="col">Day (UTC)</th>
                <th scope="col">Sent</th>
                <th scope="col">Failed</th>
              </tr>
            </thead>
            <tbody>
              {days.map((d) => (
                <tr>
                  <td>{d.day}</td>
                  <td>{d.sent}</td>
                  <td>{d.failed}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  )
}
