import { describe, expect, it } from 'vitest'
import { compileContent, type MessageContent, type Payload } from '../../src/templates/placeholders.ts'
import { fields, subject } from '../support/placeholders.ts'

describe('placeholder syntax', () => {
  it('fills {{variable}} in subject, text_body and html_body', () => {
    expect(fields('Hi {{name}}!', { name: 'Ada' })).toEqual({
      subject: 'Hi Ada!',
      text_body: 'Hi Ada!',
      html_body: 'Hi Ada!',
    })
  })

  it('matches names case-sensitively', () => {
    const payload = { name: 'lower', Name: 'Title', NAME: 'UPPER' }
    expect(subject('{{name}} {{Name}} {{NAME}}', payload)).toBe('lower Title UPPER')
    expect(subject('[{{nAmE}}]', payload)).toBe('[]')
    expect(subject('[{{Name}}]', { name: 'lower' })).toBe('[]')
  })

  it('ignores spaces at either end inside the braces', () => {
    const payload = { first_name: 'Ada' }
    for (const template of [
      '{{ first_name }}',
      '{{first_name }}',
      '{{   first_name}}',
      '{{\tfirst_name\t}}',
    ]) {
      expect(fields(template, payload)).toEqual({ subject: 'Ada', text_body: 'Ada', html_body: 'Ada' })
    }
  })

  it('ignores spaces in the middle too: {{first name}} is the variable firstname', () => {
    expect(subject('{{first name}}', { firstname: 'joined', 'first name': 'spaced' })).toBe('joined')
    expect(subject('{{ f i r s t }}', { first: 'x' })).toBe('x')
    expect(subject('[{{first name}}]', { 'first name': 'spaced' })).toBe('[]')
  })

  it('does not treat a line break inside the braces as a space', () => {
    expect(subject('{{first\nname}}', { firstname: 'x' })).toBe('{{first\nname}}')
    expect(subject('{{\nname}}', { name: 'x' })).toBe('{{\nname}}')
  })

  it('accepts letters, digits, underscores, dots and dashes in a name', () => {
    const payload = {
      attr_1: 'underscore',
      'user.name': 'dot',
      'first-name': 'dash',
      '2024': 'digits',
      _x: 'leading underscore',
      'a.b-c_d9': 'mixed',
      prénom: 'accented',
      名前: 'cjk',
    }
    expect(subject('{{attr_1}}|{{user.name}}|{{first-name}}|{{2024}}', payload)).toBe(
      'underscore|dot|dash|digits',
    )
    expect(subject('{{_x}}|{{a.b-c_d9}}|{{prénom}}|{{名前}}', payload)).toBe(
      'leading underscore|mixed|accented|cjk',
    )
  })

  it('reads a dotted name as one flat key, not a path into nested objects', () => {
    expect(subject('[{{user.name}}]', { user: { name: 'nested' } })).toBe('[]')
    expect(subject('[{{user.name}}]', { 'user.name': 'flat', user: { name: 'nested' } })).toBe('[flat]')
  })

  it('leaves braces around anything that is not a name as literal text', () => {
    const payload = { a: 'A', b: 'B', 'a+b': 'plus', 'a b': 'space', $x: 'dollar' }
    for (const template of [
      '{{a+b}}',
      '{{ a + b }}',
      '{{$x}}',
      '{{a!}}',
      '{{"a"}}',
      '{{a/b}}',
      '{{...}}',
      '{{-}}',
      '{{.}}',
    ]) {
      expect(fields(template, payload)).toEqual({
        subject: template,
        text_body: template,
        html_body: template,
      })
    }
  })

  it('does not re-scan inserted values for placeholders', () => {
    const payload = { a: '{{b}}', b: 'B' }
    expect(fields('{{a}}', payload)).toEqual({ subject: '{{b}}', text_body: '{{b}}', html_body: '{{b}}' })
  })

  it('leaves text without placeholders exactly as it is', () => {
    const content: MessageContent = {
      subject: 'Plain',
      text_body: 'Plain\r\ntext',
      html_body: '<p>Plain</p>',
    }
    expect(compileContent(content)({ a: 1 })).toEqual({
      subject: 'Plain',
      text_body: 'Plain\r\ntext',
      html_body: '<p>Plain</p>',
    })
  })
  it('keeps the template’s own whitespace and line breaks around placeholders', () => {
    const template = '  \r\n\t{{a}}\n\n {{b}} \r\n'
    expect(fields(template, { a: 'A', b: 'B' })).toEqual({
      subject: '  \r\n\tA\n\n B \r\n',
      text_body: '  \r\n\tA\n\n B \r\n',
      html_body: '  \r\n\tA\n\n B \r\n',
    })
  })
})

describe('unmatched and odd braces', () => {
  const payload = { x: 'X' }

  it('leaves an empty placeholder literal: {{}} and {{ }}', () => {
    expect(fields('a{{}}b', payload)).toEqual({ subject: 'a{{}}b', text_body: 'a{{}}b', html_body: 'a{{}}b' })
    expect(subject('a{{  }}b', payload)).toBe('a{{  }}b')
  })

  it('leaves single braces literal: {x}', () => {
    expect(subject('{x}', payload)).toBe('{x}')
    expect(subject('{ x }', payload)).toBe('{ x }')
  })

  it('leaves a lone opening or closing pair literal', () => {
    expect(subject('{{', payload)).toBe('{{')
    expect(subject('}}', payload)).toBe('}}')
    expect(subject('a {{x b', payload)).toBe('a {{x b')
    expect(subject('a x}} b', payload)).toBe('a x}} b')
    expect(subject('{{x}', payload)).toBe('{{x}')
    expect(subject('{x}}', payload)).toBe('{x}}')
  })

  it('fills the innermost {{name}} and keeps surplus braces: {{{x}}} is { + value + }', () => {
    expect(fields('{{{x}}}', payload)).toEqual({ subject: '{X}', text_body: '{X}', html_body: '{X}' })
    expect(subject('{{{{x}}}}', payload)).toBe('{{X}}')
    expect(subject('{{x}}}', payload)).toBe('X}')
    expect(subject('{{{x}}', payload)).toBe('{X')
  })

  it('keeps the outer text of a nested pair and fills the inner one', () => {
    expect(subject('{{ {{x}} }}', payload)).toBe('{{ X }}')
  })

  it('does not let a broken placeholder swallow a later good one', () => {
    expect(subject('{{ bad! }} {{x}} {{', payload)).toBe('{{ bad! }} X {{')
    expect(subject('{{x {{x}}', payload)).toBe('{{x X')
  })
})

describe('missing variables and null payloads', () => {
  it('renders a variable the member lacks as an empty string', () => {
    expect(fields('Hi {{name}}!', { other: 'x' })).toEqual({
      subject: 'Hi !',
      text_body: 'Hi !',
      html_body: 'Hi !',
    })
  })

  it('renders every placeholder empty for a null payload (batches without an audience)', () => {
    const render = compileContent({
      subject: 'Hi {{name}}, {{ code }}',
      text_body: 'Dear {{name}}\n{{x}}{{y}}',
      html_body: '<b>{{name}}</b>',
    })
    expect(render(null)).toEqual({ subject: 'Hi , ', text_body: 'Dear \n', html_body: '<b></b>' })
  })

  it('renders every placeholder empty for an empty payload', () => {
    expect(fields('[{{a}}]', {})).toEqual({ subject: '[]', text_body: '[]', html_body: '[]' })
  })

  it('does not read inherited properties such as constructor or __proto__', () => {
    expect(subject('[{{constructor}}][{{__proto__}}][{{toString}}][{{hasOwnProperty}}]', { a: 1 })).toBe(
      '[][][][]',
    )
  })

  it('reads an own __proto__ key from a parsed JSON payload', () => {
    const payload = JSON.parse('{"__proto__": "own"}') as Record<string, unknown>
    expect(subject('[{{__proto__}}]', payload)).toBe('[own]')
  })

  it('treats a payload that is not an object (array, scalar) as carrying no variables', () => {
    const render = compileContent({ subject: '[{{0}}][{{length}}]' })
    expect(render(['a'] as unknown as Payload).subject).toBe('[][]')
    expect(render('ab' as unknown as Payload).subject).toBe('[][]')
    expect(render(42 as unknown as Payload).subject).toBe('[][]')
  })
})

describe('repetition and adjacency', () => {
  it('fills every occurrence of a repeated placeholder', () => {
    expect(fields('{{n}}, {{ n }} and {{n}}', { n: 'Ada' }).text_body).toBe('Ada, Ada and Ada')
  })

  it('fills adjacent placeholders with nothing between them', () => {
    expect(fields('{{a}}{{b}}{{a}}', { a: '1', b: '2' })).toEqual({
      subject: '121',
      text_body: '121',
      html_body: '121',
    })
  })

  it('fills placeholders at the very start and end of the text', () => {
    expect(subject('{{a}} middle {{b}}', { a: 'start', b: 'end' })).toBe('start middle end')
    expect(subject('{{a}}', { a: 'only' })).toBe('only')
  })

  it('handles the same name differently per field in one render', () => {
    const render = compileContent({ subject: '{{v}}', text_body: '{{v}}', html_body: '{{v}}' })
    expect(render({ v: '<a>\n' })).toEqual({ subject: '<a>', text_body: '<a>\n', html_body: '&lt;a&gt;\n' })
  })
})

describe('compileContent', () => {
  it('omits text_body and html_body when the content has none', () => {
    const onlySubject = compileContent({ subject: 'S {{a}}' })({ a: 1 })
    expect(onlySubject).toEqual({ subject: 'S 1' })
    expect(Object.keys(onlySubject)).toEqual(['subject'])

    const nulls = compileContent({ subject: 'S', text_body: null, html_body: null })(null)
    expect(Object.keys(nulls)).toEqual(['subject'])

    const textOnly = compileContent({ subject: 'S', text_body: 'T {{a}}' })({ a: 'x' })
    expect(textOnly).toEqual({ subject: 'S', text_body: 'T x' })
    expect('html_body' in textOnly).toBe(false)

    const htmlOnly = compileContent({ subject: 'S', text_body: null, html_body: '<i>{{a}}</i>' })({ a: 'x' })
    expect(htmlOnly).toEqual({ subject: 'S', html_body: '<i>x</i>' })
    expect('text_body' in htmlOnly).toBe(false)
  })

  it('keeps an empty-string body (it was given, only null or absent is omitted)', () => {
    expect(compileContent({ subject: 'S', text_body: '', html_body: '' })(null)).toEqual({
      subject: 'S',
      text_body: '',
      html_body: '',
    })
  })

  it('compiles once and renders independent results for each payload', () => {
    const render = compileContent({
      subject: 'Hi {{name}}',
      text_body: 'Code {{code}}',
      html_body: '<b>{{name}}</b>',
    })
    const first = render({ name: 'Ada', code: 1 })
    const second = render({ name: 'Bob' })
    const third = render(null)
    expect(first).toEqual({ subject: 'Hi Ada', text_body: 'Code 1', html_body: '<b>Ada</b>' })
    expect(second).toEqual({ subject: 'Hi Bob', text_body: 'Code ', html_body: '<b>Bob</b>' })
    expect(third).toEqual({ subject: 'Hi ', text_body: 'Code ', html_body: '<b></b>' })
    expect(first).not.toBe(second)

    first.subject = 'changed'
    expect(render({ name: 'Ada', code: 1 }).subject).toBe('Hi Ada')
  })

  it('does not read the content again after compiling', () => {
    const content: MessageContent = { subject: 'Hi {{name}}', text_body: '{{name}}' }
    const render = compileContent(content)
    content.subject = 'changed {{other}}'
    content.text_body = null
    expect(render({ name: 'Ada' })).toEqual({ subject: 'Hi Ada', text_body: 'Ada' })
  })

  it('does not change the payload', () => {
    const payload = { name: '<b>\n', n: 1 }
    const copy = structuredClone(payload)
    fields('{{name}}{{n}}', payload)
    expect(payload).toEqual(copy)
  })
})
