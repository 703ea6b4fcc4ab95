/**
 * `{{placeholder}}` rendering for batch emails. Pure: no I/O, no database.
 *
 * A template is parsed once into literal text and variable names, then rendered per recipient by
 * concatenation, so a batch of thousands costs one parse and a few string joins per member.
 * The rules (and why) are in docs/decisions.md, section "Placeholders".
 */

export interface MessageContent {
  subject: string
  text_body?: string | null
  html_body?: string | null
}

export type Payload = Record<string, unknown> | null

export interface RenderedContent {
  subject: string
  text_body?: string
  html_body?: string
}

interface Segment {
  name: string
  /** Literal text between this placeholder and the next one (or the end). */
  after: string
}

interface Compiled {
  head: string
  segments: Segment[]
}

// No braces inside, so `{{{x}}}` matches only its inner `{{x}}` and the outer braces stay text.
const CANDIDATE = /\{\{([^{}]*)\}\}/g
// "Spaces inside the braces are ignored": all of them, not just the ends, so `{{first name}}`
// is `firstname`. Tabs count as spaces; a line break does not (a placeholder is on one line).
const BLANKS = /[ \t]+/g
// Letters and digits of any script, `_`, `.` and `-`, with at least one letter, digit or `_`:
// keeps things like `{{}}`, `{{...}}` or `{{ a+b }}` literal instead of silently erasing them.
const NAME = /^[.-]*[\p{L}\p{M}\p{N}_][\p{L}\p{M}\p{N}_.-]*$/u

function compile(template: string): Compiled {
  const segments: Segment[] = []
  let head = ''
  let last = 0
  for (const match of template.matchAll(CANDIDATE)) {
    const name = (match[1] ?? '').replace(BLANKS, '')
    // Not a name: the braces stay in the literal text around them.
    if (!NAME.test(name)) continue
    const literal = template.slice(last, match.index)
    const previous = segments.at(-1)
    if (previous) previous.after = literal
    else head = literal
    segments.push({ name, after: '' })
    last = match.index + match[0].length
  }
  const rest = template.slice(last)
  const previous = segments.at(-1)
  if (previous) previous.after = rest
  else head = rest
  return { head, segments }
}

/** The text a payload value stands for, before any per-field transformation. */
function valueText(vars: Record<string, unknown> | null, name: string): string {
  // Own properties only: `{{constructor}}` or `{{__proto__}}` must not reach Object.prototype.
  if (vars === null || !Object.hasOwn(vars, name)) return ''
  const value = vars[name]
  if (typeof value === 'string') return value
  // Non-string values render as their JSON text, a JSON null as `null` (docs/decisions.md, "Placeholders").
  if (value === undefined) return ''
  if (typeof value === 'bigint') return value.toString()
  return JSON.stringify(value) ?? ''
}

type Encode = (value: string) => string

const asIs: Encode = (value) => value

// A hand-written scan: about twice as fast as a regex replace with a callback, and escaping is
// the hot spot of an HTML batch. Values with nothing to escape come back as the same string.
export const escapeHtml: Encode = (value) => {
  let out = ''
  let last = 0
  for (let i = 0; i < value.length; i++) {
    let entity: string
    switch (value.charCodeAt(i)) {
      case 0x26:
        entity = '&amp;'
        break
      case 0x3c:
        entity = '&lt;'
        break
      case 0x3e:
        entity = '&gt;'
        break
      case 0x22:
        entity = '&quot;'
        break
      case 0x27:
        entity = '&#39;'
        break
      default:
        continue
    }
    out += value.slice(last, i) + entity
    last = i + 1
  }
  return last === 0 ? value : out + value.slice(last)
}

// A line break in a header value would start a new header: CR and LF are removed
// from values inserted into the subject.
const LINE_BREAK = /[\r\n]/
const LINE_BREAKS = /[\r\n]+/g
const subjectSafe: Encode = (value) => (LINE_BREAK.test(value) ? value.replace(LINE_BREAKS, '') : value)

function render(template: Compiled, vars: Record<string, unknown> | null, encode: Encode): string {
  let out = template.head
  for (const segment of template.segments) {
    const value = valueText(vars, segment.name)
    out += (value === '' ? '' : encode(value)) + segment.after
  }
  return out
}

/** Payloads are stored as JSON objects; anything else (array, scalar) carries no variables. */
function variables(payload: Payload): Record<string, unknown> | null {
  return typeof payload === 'object' && payload !== null && !Array.isArray(payload) ? payload : null
}

/** Compiles once, renders per recipient. */
export function compileContent(content: MessageContent): (payload: Payload) => RenderedContent {
  const subject = compile(content.subject)
  const text = content.text_body == null ? undefined : compile(content.text_body)
  const html = content.html_body == null ? undefined : compile(content.html_body)
  return (payload) => {
    const vars = variables(payload)
    const rendered: RenderedContent = { subject: render(subject, vars, subjectSafe) }
    if (text) rendered.text_body = render(text, vars, asIs)
    if (html) rendered.html_body = render(html, vars, escapeHtml)
    return rendered
  }
}

/** The placeholders' names, each once, in the order they first appear (subject, text, HTML). */
export function placeholderNames(content: MessageContent): string[] {
  const fields = [content.subject, content.text_body, content.html_body]
  const names = fields.flatMap((field) => (field == null ? [] : compile(field).segments.map((s) => s.name)))
  return [...new Set(names)]
}
