import { listConnections } from '../connections/connections.ts'
import type { Dashboard, DashboardContext } from './env.ts'
import { page, type Section } from './layout.tsx'
import { signedIn } from './resource.ts'
import {
  djangoSettings,
  nodemailerSettings,
  RELAY_USERNAME,
  type RelaySettings,
  railsSettings,
  relaySettings,
  type Submission,
  submissionOf,
  wordpressSettings,
} from './smtp-relay-settings.ts'

export const SMTP_RELAY_PAGE = '/dashboard/smtp' satisfies Section

/** "Sending over SMTP": what an app that only speaks SMTP is configured with, and ready settings. */
export function registerSmtpRelay(app: Dashboard): void {
  app.get(SMTP_RELAY_PAGE, smtpRelayPage)
}

async function smtpRelayPage(c: DashboardContext) {
  const { sql, accountId, session, services } = signedIn(c)
  const connections = await listConnections(sql, accountId)
  const settings = relaySettings(services.config)
  const from = connections.find((connection) => connection.is_default)?.from ?? connections[0]?.from
  const submission = submissionOf(settings, from ?? 'you@your-domain.example')
  return page(
    c,
    { title: 'Sending over SMTP', section: SMTP_RELAY_PAGE },
    <>
      <p>
        Apps that can only send mail by SMTP (WordPress, Django, Rails, Nextcloud, monitoring tools) send
        through Mailroom's SMTP relay. Their mail is queued like the API's: paced, within quotas, retried,
        suppressions and webhooks applied, and shown in the outbox.
      </p>
      {session.plan === 'pro' ? null : (
        <article role="note">
          The relay queues mail, which needs the Pro plan: this account is on the Free plan, so the relay
          refuses its messages.
        </article>
      )}
      <Connect settings={settings} hasConnection={from !== undefined} />
      {submission ? (
        <ReadySettings submission={submission} />
      ) : (
        <p>Both of the relay's listeners are off on this server, so there is nothing to connect to yet.</p>
      )}
    </>,
  )
}

function portText(port: number | null): string {
  return port === null ? 'off' : String(port)
}

function Connect(props: { settings: RelaySettings; hasConnection: boolean }) {
  const { settings } = props
  return (
    <section>
      <h2>Connection settings</h2>
      <CopyField id="smtp-host" label="Host" value={settings.host} />
      <p>
        Port <strong>{portText(settings.starttls)}</strong> with STARTTLS, or port{' '}
        <strong>{portText(settings.implicitTls)}</strong> with implicit TLS (also called SSL/TLS).
      </p>
      <CopyField id="smtp-username" label="Username" value={RELAY_USERNAME} />
      <p>
        <strong>Password:</strong> an API key. <a href="/dashboard/keys">Create one on the API keys page</a>{' '}
        for each app, so that you can revoke one app's access alone.
      </p>
      <p>
        The message's sender chooses the connection it goes through, as <code>from</code> does in the API: it
        must be the address of one of your{' '}
        <a href="/dashboard/connections">
          {props.hasConnection ? 'connections' : 'connections (add one first)'}
        </a>
        . A key scoped to one connection sends from that connection's address only.
      </p>
      {settings.selfSigned ? (
        <p>
          This server's relay presents a self-signed certificate: tell the app to accept it (the settings
          below do where the app allows it), or have the operator set <code>MAILROOM_SMTP_TLS_CERT</code> and{' '}
          <code>MAILROOM_SMTP_TLS_KEY</code> to a real one.
        </p>
      ) : null}
    </section>
  )
}

/** The apps given ready settings: each one's snippet and where in the app it goes. */
const APPS: { id: string; name: string; where: string; settings: (s: Submission) => string }[] = [
  {
    id: 'wordpress',
    name: 'WordPress (WP Mail SMTP)',
    where: "In wp-config.php, above “That's all, stop editing!”",
    settings: wordpressSettings,
  },
  { id: 'django', name: 'Django', where: 'In settings.py (with import os)', settings: djangoSettings },
  {
    id: 'rails',
    name: 'Rails',
    where: 'In config/environments/production.rb, inside the configure block',
    settings: railsSettings,
  },
  { id: 'nodemailer', name: 'Nodemailer', where: 'In your Node.js app', settings: nodemailerSettings },
]

function ReadySettings(props: { submission: Submission }) {
  const s = props.submission
  return (
    <section>
      <h2>Ready settings</h2>
      <p>
        Each uses port {s.port} ({s.implicitTls ? 'implicit TLS' : 'STARTTLS'}) and sends from {s.from}.
        Replace <code>your API key</code> or set <code>MAILROOM_API_KEY</code> where the app runs.
      </p>
      {APPS.map((app) => (
        <>
          <h3>{app.name}</h3>
          <CodeBlock id={`smtp-${app.id}`} label={app.where} code={app.settings(s)} />
        </>
      ))}
    </section>
  )
}

/** A value to copy: a read-only field (a long one scrolls inside it), with a copy button the script shows. */
function CopyField(props: { id: string; label: string; value: string }) {
  return (
    <>
      <label for={props.id}>{props.label}</label>
      <div class="copy">
        <input id={props.id} readonly value={props.value} />
        <button type="button" class="copy-button" data-copy={props.id} hidden>
          Copy
        </button>
      </div>
    </>
  )
}

/** Code to copy: a read-only box whose long lines wrap inside it, so nothing scrolls the page sideways. */
function CodeBlock(props: { id: string; label: string; code: string }) {
  return (
    <>
      <label for={props.id}>{props.label}</label>
      <textarea
        id={props.id}
        readonly
        spellcheck={false}
        rows={props.code.split('\n').length + 1}
        class="snippet"
      >
        {props.code}
      </textarea>
      <button type="button" class="copy-button outline" data-copy={props.id} hidden>
        Copy
      </button>
    </>
  )
}
