/**
 * The one error catalog (openapi/openapi.yaml, x-error-catalog): every code the API answers is
 * rendered in the body shape the contract documents for it, with its status; the operator's
 * codes never reach an HTTP answer; and the generator refuses a catalog out of step with the
 * document.
 */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { HTTPException } from 'hono/http-exception'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { readCatalog } from '../../scripts/generate/errors.ts'
import type { JsonObject } from '../../scripts/generate/json-schema.ts'
import { ROOT } from '../../scripts/generate.ts'
import { AppError, type ErrorCode, invalidInput } from '../../src/app-error.ts'
import { ERROR_CATALOG } from '../../src/generated/errors.ts'
import {
  SimpleErrorSchema,
  StandardErrorSchema,
  TemplateLimitErrorSchema,
  ValidationErrorSchema,
} from '../../src/generated/routes.ts'
import { createApp } from '../../src/http/app.ts'
import { errorResponse, MAX_REPORTED_ISSUES } from '../../src/http/error-responses.ts'
import type { Services } from '../../src/services.ts'

const SCHEMAS = {
  standard: StandardErrorSchema.strict(),
  simple: SimpleErrorSchema.strict(),
  'template-limit': TemplateLimitErrorSchema.strict(),
  validation: ValidationErrorSchema,
}

const CODES = Object.keys(ERROR_CATALOG) as ErrorCode[]

/** An error of `code` as domain code raises it, with whatever its shape carries. */
function raised(code: ErrorCode): AppError {
  if (code === 'VALIDATION_ERROR')
    return invalidInput([{ path: ['subject'], message: 'Required', code: 'invalid_type' }])
  if (code === 'TEMPLATE_LIMIT_REACHED') {
    return new AppError(code, 'The free plan allows 3 templates', {
      details: { limit: 3, used: 3, upgradeRequired: true },
    })
  }
  return new AppError(code, `refused: ${code}`, code === 'RATE_LIMITED' ? { waitMs: 1_500 } : {})
}

describe('the HTTP rendering of the catalog', () => {
  it.each(CODES.filter((code) => ERROR_CATALOG[code].api))(
    '%s: its status and documented body shape',
    (code) => {
      const entry = ERROR_CATALOG[code]
      const response = errorResponse(raised(code))
      expect(response?.status).toBe(entry.status)
      expect(SCHEMAS[entry.body].safeParse(response?.body).success, JSON.stringify(response?.body)).toBe(true)
      if (entry.body === 'standard') expect(response?.body).toMatchObject({ code })
      if ('error' in entry) expect(response?.body).toMatchObject({ error: entry.error })
      // Every 429, and only a 429, says when to retry.
      expect('Retry-After' in (response?.headers ?? {})).toBe(entry.status === 429)
    },
  )

  it('Retry-After is the wait in whole seconds, at least 1', () => {
    expect(errorResponse(new AppError('RATE_LIMITED', 'x', { waitMs: 1_500 }))?.headers).toEqual({
      'Retry-After': '2',
    })
    expect(errorResponse(new AppError('RATE_LIMITED', 'x', { waitMs: 10 }))?.headers).toEqual({
      'Retry-After': '1',
    })
    expect(
      errorResponse(new AppError('QUOTA_EXCEEDED', 'x', { details: { retryAfter: 30 } }))?.headers,
    ).toEqual({ 'Retry-After': '30' })
  })

  it(`a validation body lists at most ${MAX_REPORTED_ISSUES} issues`, () => {
    const issues = Array.from({ length: 150 }, (_, i) => ({
      path: ['to', i],
      message: 'Invalid',
      code: 'invalid_format',
    }))
    const body = errorResponse(invalidInput(issues))?.body as { error: { issues: unknown[] } }
    expect(body.error.issues).toHaveLength(MAX_REPORTED_ISSUES)
    expect(body.error.issues[0]).toEqual(issues[0])
  })

  it.each(CODES.filter((code) => !ERROR_CATALOG[code].api))(
    '%s is an operator refusal: never an HTTP answer',
    (code) => {
      expect(errorResponse(raised(code))).toBeUndefined()
    },
  )
})

describe('what the API answers when something unforeseen is thrown', () => {
  // No database needed: the failures are thrown before any query.
  const services = {
    log: { error: () => {} },
    config: { bodyLimitBytes: 1024 },
    sql: {},
  } as unknown as Services
  const app = createApp(services)
  app.get('/boom/:kind', (c) => {
    const kind = c.req.param('kind')
    if (kind === 'operator') throw new AppError('ACCOUNT_EXISTS', 'an operator refusal')
    if (kind === 'http') throw new HTTPException(418, { message: 'teapot' })
    throw new Error('a bug')
  })

  it.each(['operator', 'http', 'bug'])(
    '%s: 500 INTERNAL_ERROR without internals, never an undocumented code',
    async (kind) => {
      const response = await app.request(`/boom/${kind}`)
      expect(response.status).toBe(500)
      expect(await response.json()).toEqual({
        code: 'INTERNAL_ERROR',
        message: 'An unexpected error occurred',
      })
    },
  )
})

describe('the catalog generator', () => {
  async function document(): Promise<JsonObject> {
    return parse(await readFile(path.join(ROOT, 'openapi/openapi.yaml'), 'utf8')) as JsonObject
  }

  it('reads the committed document', async () => {
    expect(readCatalog(await document()).map((e) => e.code)).toEqual(CODES)
  })

  it('refuses a standard code the StandardError schema does not list', async () => {
    const doc = await document()
    const catalog = doc['x-error-catalog'] as { api: JsonObject }
    catalog.api.SOMETHING_NEW = { status: 400, body: 'standard', description: 'new' }
    expect(() => readCatalog(doc)).toThrow(/StandardError\/properties\/code\/enum.*SOMETHING_NEW/)
  })

  it('refuses an example that uses a code outside the catalog', async () => {
    const doc = await document()
    const responses = (doc.components as JsonObject).responses as JsonObject
    responses.Extra = {
      description: 'x',
      content: {
        'application/json': { examples: { bad: { value: { code: 'BAD_REQUEST', message: 'x' } } } },
      },
    }
    expect(() => readCatalog(doc)).toThrow(/BAD_REQUEST.*not in the error catalog/)
  })

  it('refuses a code declared twice, and an operator entry with another body', async () => {
    const doc = await document()
    const catalog = doc['x-error-catalog'] as { api: JsonObject; operator: JsonObject }
    catalog.operator.NOT_FOUND = { status: 404, description: 'twice' }
    expect(() => readCatalog(doc)).toThrow(/NOT_FOUND is declared twice/)
    delete catalog.operator.NOT_FOUND
    catalog.operator.ODD = { status: 400, body: 'simple', error: 'x', description: 'odd' }
    expect(() => readCatalog(doc)).toThrow(/operator errors use the standard body/)
  })
})
