import type { ValidationIssue } from '../app-error.ts'

/** A value met in the walk, with the way back to the root its issue's path is read from. */
interface Visit {
  value: unknown
  parent: Visit | undefined
  key: string | number
}

/**
 * PostgreSQL text cannot hold U+0000, nor a lone UTF-16 surrogate (it is not UTF-8), both of
 * which JSON can carry (`\u0000`, `\ud800`). A string or object key with one would fail deep in
 * a query; it is refused up front as invalid input instead. Nor is a key named `__proto__` kept:
 * zod leaves it out of what it parses (set on the object it builds, it would replace that
 * object's prototype), so a payload would lose it without a word; it is refused too. Walked
 * without recursion, so that no depth of nesting can overflow the stack, and without building
 * a path for each value: only an issue's path is spelled out, so that a body of many values
 * costs one small record each.
 */
export function unstorableTextIssues(value: unknown): ValidationIssue[] {
  const issues: ValidationIssue[] = []
  const pending: Visit[] = [{ value, parent: undefined, key: '' }]
  for (let visit = pending.pop(); visit; visit = pending.pop()) {
    const current = visit.value
    if (typeof current === 'string') {
      if (!isStorable(current)) issues.push(issue(pathOf(visit)))
    } else if (Array.isArray(current)) {
      for (let index = 0; index < current.length; index++) {
        pending.push({ value: current[index], parent: visit, key: index })
      }
    } else if (current !== null && typeof current === 'object') {
      const record = current as Record<string, unknown>
      for (const key of Object.keys(record)) {
        if (!isStorable(key)) issues.push(issue([...pathOf(visit), key]))
        if (key === '__proto__') issues.push(protoKeyIssue(pathOf(visit)))
        pending.push({ value: record[key], parent: visit, key })
      }
    }
  }
  return issues.reverse()
}

function pathOf(visit: Visit): (string | number)[] {
  const path: (string | number)[] = []
  for (let at: Visit | undefined = visit; at?.parent; at = at.parent) path.push(at.key)
  return path.reverse()
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
