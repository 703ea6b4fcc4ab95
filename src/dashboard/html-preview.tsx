/**
 * Heads the frame's document: its own policy, read before any of the email's markup, so that
 * nothing remote loads even before the inherited one applies (a tracking pixel would tell the
 * sender the message was looked at).
 */
const PREVIEW_POLICY =
  '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; style-src \'unsafe-inline\'">'

/**
 * An email's HTML, shown in a frame with every sandbox restriction (no scripts, no forms, an
 * origin of its own), where nothing remote loads: never as the dashboard's own page.
 */
export function HtmlPreview(props: { html: string }) {
  return (
    <>
      <iframe
        class="html-preview"
        sandbox=""
        srcdoc={PREVIEW_POLICY + props.html}
        title="The message's HTML"
        referrerpolicy="no-referrer"
      />
      <details>
        <summary>HTML source</summary>
        <pre class="body-text">{props.html}</pre>
      </details>
    </>
  )
}
