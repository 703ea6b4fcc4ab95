/** What the dashboard page tests share: text a page must escape, and API answers read as JSON. */

/** Text that runs script and breaks out of attributes unless escaped. */
export const HOSTILE = `<script>alert("x")</script>&"'`
/** `HOSTILE` as a page shows it, escaped. */
export const ESCAPED = '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&quot;&#39;'

export async function json(res: Response) {
  return (await res.json()) as Record<string, unknown>
}
