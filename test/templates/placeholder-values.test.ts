import { describe, expect, it } from 'vitest'
import { compileContent } from '../../src/templates/placeholders.ts'
import { fields, subject } from '../support/placeholders.ts'

describe('value types', () => {
  it('inserts strings as they are', () => {
    expect(subject('[{{s}}]', { s: 'text' })).toBe('[text]')
    expect(subject('[{{s}}]', { s: '' })).toBe('[]')
  })

  it('renders numbers as their JSON text', () => {
    expect(subject('{{a}} {{b}} {{c}} {{d}}', { a: 42, b: 0, c: -1.5, d: 1e21 })).toBe('42 0 -1.5 1e+21')
  })

  it('renders booleans as true and false', () => {
    expect(subject('{{t}} {{f}}', { t: true, f: false })).toBe('true false')
  })

  it('renders objects and arrays as JSON.stringify text', () => {
    const payload = { o: { a: 1, b: 'x' }, l: [1, 'two', null], e: {}, n: [] }
    expect(fields('{{o}} {{l}} {{e}} {{n}}', payload).text_body).toBe('{"a":1,"b":"x"} [1,"two",null] {} []')
  })

  it('renders a null value as its JSON text, as every non-string value', () => {
    expect(fields('[{{v}}]', { v: null })).toEqual({
      subject: '[null]',
      text_body: '[null]',
      html_body: '[null]',
    })
  })

  it('renders undefined, functions and symbols (not JSON values) as empty', () => {
    expect(subject('[{{u}}][{{f}}][{{s}}]', { u: undefined, f: () => 1, s: Symbol('x') })).toBe('[][][]')
  })

  it('renders a bigint as its digits', () => {
    expect(subject('{{b}}', { b: 12345678901234567890n })).toBe('12345678901234567890')
  })

  it('HTML-escapes JSON text too when it goes into html_body', () => {
    expect(fields('{{o}}', { o: { tag: '<b>' } })).toEqual({
      subject: '{"tag":"<b>"}',
      text_body: '{"tag":"<b>"}',
      html_body: '{&quot;tag&quot;:&quot;&lt;b&gt;&quot;}',
    })
  })
})

describe('HTML escaping', () => {
  it.each([
    ['&', '&amp;'],
    ['<', '&lt;'],
    ['>', '&gt;'],
    ['"', '&quot;'],
    ["'", '&#39;'],
  ])('escapes %s in html_body only', (char, escaped) => {
    expect(fields(`[{{v}}]`, { v: `a${char}b` })).toEqual({
      subject: `[a${char}b]`,
      text_body: `[a${char}b]`,
      html_body: `[a${escaped}b]`,
    })
  })

  it('escapes at the very start and end of a value and in runs of special characters', () => {
    expect(fields('[{{v}}]', { v: '<<&>>' }).html_body).toBe('[&lt;&lt;&amp;&gt;&gt;]')
    expect(fields('[{{v}}]', { v: `'x"` }).html_body).toBe('[&#39;x&quot;]')
    expect(fields('[{{v}}]', { v: '&' }).html_body).toBe('[&amp;]')
  })

  it('escapes a whole script tag and an attribute break-out', () => {
    const render = compileContent({ subject: 's', html_body: '<a title="{{t}}">{{b}}</a>' })
    expect(render({ t: '" onmouseover="x', b: '<script>alert(1)</script>' }).html_body).toBe(
      '<a title="&quot; onmouseover=&quot;x">&lt;script&gt;alert(1)&lt;/script&gt;</a>',
    )
  })

  it('escapes & first, so an existing entity is shown as written rather than decoded', () => {
    expect(fields('{{v}}', { v: '&lt; &amp;' }).html_body).toBe('&amp;lt; &amp;amp;')
  })

  it('leaves characters that need no escaping alone', () => {
    expect(fields('{{v}}', { v: 'é ü / = ` ; 中' }).html_body).toBe('é ü / = ` ; 中')
  })

  it('leaves the template’s own HTML untouched', () => {
    const html = '<p class="x">Tom & Jerry\'s <b>{{name}}</b> &amp; co</p>'
    const render = compileContent({
      subject: '<b>{{name}}</b>',
      text_body: '<b>{{name}}</b>',
      html_body: html,
    })
    expect(render({ name: 'Ada' })).toEqual({
      subject: '<b>Ada</b>',
      text_body: '<b>Ada</b>',
      html_body: '<p class="x">Tom & Jerry\'s <b>Ada</b> &amp; co</p>',
    })
  })
})

describe('line breaks in the subject', () => {
  it.each([
    ['LF', 'a\nb'],
    ['CR', 'a\rb'],
    ['CRLF', 'a\r\nb'],
    ['a run of mixed breaks', 'a\r\n\r\n\n\rb'],
  ])('removes %s from a value inserted into the subject', (_, value) => {
    expect(subject('[{{v}}]', { v: value })).toBe('[ab]')
  })

  it('removes breaks at the ends of a value and in JSON text too', () => {
    expect(subject('[{{v}}]', { v: '\r\nx\n' })).toBe('[x]')
    expect(subject('[{{v}}]', { v: { k: 'a\nb' } })).toBe('[{"k":"a\\nb"}]')
  })

  it('cannot inject a header through a placeholder value', () => {
    const rendered = subject('Hello {{name}}', { name: 'x\r\nBcc: victim@example.com\r\n\r\nbody' })
    expect(rendered).not.toMatch(/[\r\n]/)
    expect(rendered).toBe('Hello xBcc: victim@example.combody')
  })

  it('keeps line breaks from values in text_body and html_body', () => {
    const render = compileContent({ subject: '{{v}}', text_body: '{{v}}', html_body: '{{v}}' })
    expect(render({ v: 'a\r\nb\nc\rd' })).toEqual({
      subject: 'abcd',
      text_body: 'a\r\nb\nc\rd',
      html_body: 'a\r\nb\nc\rd',
    })
  })

  it('leaves the subject template’s own text alone (only inserted values change)', () => {
    expect(subject('a\nb {{v}}', { v: 'c\nd' })).toBe('a\nb cd')
  })

  it('keeps other whitespace in subject values', () => {
    expect(subject('[{{v}}]', { v: ' a\tb  ' })).toBe('[ a\tb  ]')
  })
})
