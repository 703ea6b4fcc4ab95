import { HONEYPOT_FIELD } from '../forms/submission.ts'

/**
 * Paste-ready HTML for a site: a plain form posting to the hosted address, with the hidden
 * honeypot field bots fill and people never see.
 */
const HONEYPOT = `  <input type="text" name="${HONEYPOT_FIELD}" tabindex="-1" autocomplete="off" aria-hidden="true" style="position:absolute;left:-10000px">`

function attribute(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;')
}

export function signupSnippet(url: string): string {
  return [
    `<form method="post" action="${attribute(url)}">`,
    '  <input type="email" name="email" required placeholder="you@example.com" aria-label="Email">',
    HONEYPOT,
    '  <button type="submit">Subscribe</button>',
    '</form>',
  ].join('\n')
}

export function formSnippet(url: string): string {
  return [
    `<form method="post" action="${attribute(url)}">`,
    '  <input type="text" name="name" placeholder="Your name" aria-label="Name">',
    '  <input type="email" name="email" required placeholder="you@example.com" aria-label="Email">',
    '  <textarea name="message" required placeholder="Your message" aria-label="Message"></textarea>',
    HONEYPOT,
    '  <button type="submit">Send</button>',
    '</form>',
  ].join('\n')
}

/** The public address and the snippet, each in a read-only box with a copy button. */
export function PublicAddress(props: { id: string; url: string; snippet: string }) {
  return (
    <>
      <label for={`${props.id}-url`}>Public address</label>
      <div class="copy">
        <input id={`${props.id}-url`} readonly value={props.url} />
        <button type="button" class="copy-button" data-copy={`${props.id}-url`} hidden>
          Copy
        </button>
      </div>
      <label for={`${props.id}-snippet`}>HTML to paste into your site</label>
      <textarea id={`${props.id}-snippet`} readonly rows={6} class="snippet">
        {props.snippet}
      </textarea>
      <button type="button" class="copy-button outline" data-copy={`${props.id}-snippet`} hidden>
        Copy the HTML
      </button>
    </>
  )
}

export function ConnectionChoice(props: {
  connections: { id: number; from: string }[]
  selected: number | null
}) {
  return (
    <label>
      Connection
      <select name="connection_id">
        <option value="">The account's default connection</option>
        {props.connections.map((c) => (
          <option value={String(c.id)} selected={c.id === props.selected}>
            {c.from}
          </option>
        ))}
      </select>
    </label>
  )
}
