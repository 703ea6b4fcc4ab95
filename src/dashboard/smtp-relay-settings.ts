import type { Config } from '../config.ts'

/** What an app needs to submit through this server's SMTP relay. */
export interface RelaySettings {
  /** Where people reach the service: the host name of MAILROOM_PUBLIC_URL. */
  host: string
  /** The STARTTLS and implicit TLS ports; null when off. */
  starttls: number | null
  implicitTls: number | null
  /** No certificate was configured: the relay presents the self-signed one it made. */
  selfSigned: boolean
}

export const RELAY_USERNAME = 'mailroom'

export function relaySettings(config: Pick<Config, 'publicUrl' | 'host' | 'relay'>): RelaySettings {
  const host = URL.canParse(config.publicUrl)
    ? new URL(config.publicUrl).hostname.replace(/^\[(.*)\]$/, '$1')
    : config.host
  return {
    host,
    starttls: config.relay.port,
    implicitTls: config.relay.securePort,
    selfSigned: config.relay.tlsCertFile === undefined,
  }
}

/** The port the ready settings use: STARTTLS when it is on, as most apps expect, else implicit TLS. */
export interface Submission {
  host: string
  port: number
  implicitTls: boolean
  selfSigned: boolean
  /** The sender the examples use: one of the account's connections. */
  from: string
}

export function submissionOf(settings: RelaySettings, from: string): Submission | null {
  const { host, selfSigned } = settings
  if (settings.starttls !== null)
    return { host, port: settings.starttls, implicitTls: false, selfSigned, from }
  if (settings.implicitTls !== null) {
    return { host, port: settings.implicitTls, implicitTls: true, selfSigned, from }
  }
  return null
}

/** WP Mail SMTP's settings as wp-config.php constants, which the plugin reads before its own form. */
export function wordpressSettings(s: Submission): string {
  return [
    "define( 'WPMS_ON', true );",
    "define( 'WPMS_MAILER', 'smtp' );",
    `define( 'WPMS_SMTP_HOST', '${s.host}' );`,
    `define( 'WPMS_SMTP_PORT', ${s.port} );`,
    `define( 'WPMS_SSL', '${s.implicitTls ? 'ssl' : 'tls'}' );`,
    "define( 'WPMS_SMTP_AUTOTLS', true );",
    "define( 'WPMS_SMTP_AUTH', true );",
    `define( 'WPMS_SMTP_USER', '${RELAY_USERNAME}' );`,
    "define( 'WPMS_SMTP_PASS', 'your API key' );",
    `define( 'WPMS_MAIL_FROM', '${s.from}' );`,
    "define( 'WPMS_MAIL_FROM_FORCE', true );",
  ].join('\n')
}

export function djangoSettings(s: Submission): string {
  return [
    'EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"',
    `EMAIL_HOST = "${s.host}"`,
    `EMAIL_PORT = ${s.port}`,
    s.implicitTls ? 'EMAIL_USE_SSL = True' : 'EMAIL_USE_TLS = True  # STARTTLS',
    `EMAIL_HOST_USER = "${RELAY_USERNAME}"`,
    'EMAIL_HOST_PASSWORD = os.environ["MAILROOM_API_KEY"]',
    `DEFAULT_FROM_EMAIL = "${s.from}"`,
  ].join('\n')
}

export function railsSettings(s: Submission): string {
  return [
    'config.action_mailer.delivery_method = :smtp',
    'config.action_mailer.smtp_settings = {',
    `  address: "${s.host}",`,
    `  port: ${s.port},`,
    s.implicitTls ? '  tls: true,' : '  enable_starttls: true,',
    `  user_name: "${RELAY_USERNAME}",`,
    '  password: ENV["MAILROOM_API_KEY"],',
    '  authentication: :plain,',
    ...(s.selfSigned ? ['  openssl_verify_mode: "none", # the relay\'s certificate is self-signed'] : []),
    '}',
    `config.action_mailer.default_options = { from: "${s.from}" }`,
  ].join('\n')
}

export function nodemailerSettings(s: Submission): string {
  return [
    "import nodemailer from 'nodemailer'",
    '',
    'const transporter = nodemailer.createTransport({',
    `  host: '${s.host}',`,
    `  port: ${s.port},`,
    s.implicitTls ? '  secure: true,' : '  secure: false,\n  requireTLS: true, // STARTTLS',
    `  auth: { user: '${RELAY_USERNAME}', pass: process.env.MAILROOM_API_KEY },`,
    ...(s.selfSigned
      ? ["  tls: { rejectUnauthorized: false }, // the relay's certificate is self-signed"]
      : []),
    '})',
    '',
    'await transporter.sendMail({',
    `  from: '${s.from}',`,
    "  to: 'someone@example.com',",
    "  subject: 'Hello from Mailroom',",
    "  text: 'Sent over SMTP.',",
    '})',
  ].join('\n')
}
