import type { ValidationIssue } from '../errors.ts'

/**
 * PostgreSQL text cannot hold U+0000, nor a lone UTF-16 surrogate (it is not UTF-8), both of
 * which JSON can carry (`\u0000`, `\ud800`). A string or object key with one would fail deep in
 * a query; it is refused up front as invalid input instead. Nor is a key named `__proto__` kept:
 * zod leaves it out of what it parses (set on the object it builds, it would replace that
 * object's prototype), so a payload would lose it without a word; it is refused too. Walked
 * without recursion, so that no depth of nesting can overflow the stack.
 */
export function unstorableTextIssues(value: unknown): ValidationIssue[] {
  const issues: ValidationIssue[] = []
  const pending: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }]
  for (let item = pending.pop(); item; item = pending.pop()) {
    const { value: current, path } = item
    if (typeof current === 'string') {
      if (!isStorable(current)) issues.push(issue(path))
    } else if (Array.isArray(current)) {
      for (const [index, child] of current.entries()) pending.push({ value: child, path: [...path, index] })
    } else if (current !== null && typeof current === 'object') {
      for (const [key, child] of Object.entries(current)) {
        if (!isStorable(key)) issues.push(issue([...path, key]))
        if (key === '__proto__') issues.push(protoKeyIssue(path))
        pending.push({ value: child, path: [...path, key] })
      }
    }
  }
  return issues.reverse()
}

function isStorable(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed()
}

function issue(path: (string | number)[]): ValidationIssue {
  return {
    path,
    message: 'Text must not contain the NUL character (\\u0000) or a lone UTF-16 surrogate',
    code: 'invalid_format',
  }
}

function protoKeyIssue(path: (string | number)[]): ValidationIssue {
  return { path: [...path, '__proto__'], message: 'A key cannot be named __proto__', code: 'custom' }
}
