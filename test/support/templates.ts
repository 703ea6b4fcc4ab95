/**
 * Requests to the /templates operations as one account or another, and what their answers
 * should be.
 */
import { expect } from 'vitest'
import type { Template } from '../../src/templates/templates.ts'
import type { SeededAccount, TestApp } from './app.ts'
import { TIMESTAMP, validationBody } from './matchers.ts'

export const content = {
  name: 'Renewal reminder',
  subject: 'Your plan renews soon',
  text_body: 'Hi',
  html_body: '<p>Hi</p>',
}

export async function statusAndBody(response: Response) {
  return { status: response.status, body: await response.json() }
}

/** The template the API should return for `owner`, with generated fields matched by shape. */
export function expectedTemplate(owner: SeededAccount, fields: Partial<Template>) {
  return {
    id: expect.any(Number),
    user_id: owner.account.id,
    name: content.name,
    subject: content.subject,
    text_body: null,
    html_body: null,
    created_at: expect.stringMatching(TIMESTAMP),
    updated_at: expect.stringMatching(TIMESTAMP),
    ...fields,
  }
}

/** The /templates requests of a test file's app. */
export function templateRequests(app: TestApp) {
  async function create(owner: SeededAccount, body: unknown = content) {
    return app.request('/templates', { method: 'POST', key: owner.key, body })
  }

  function get(who: SeededAccount, id: number) {
    return app.request(`/templates/${id}`, { key: who.key })
  }

  function put(who: SeededAccount, id: number, body: unknown) {
    return app.request(`/templates/${id}`, { method: 'PUT', key: who.key, body })
  }

  async function createOk(owner: SeededAccount, body: Record<string, unknown> = content): Promise<Template> {
    const response = await create(owner, body)
    const result = await statusAndBody(response)
    expect(result.status).toBe(201)
    return result.body.template as Template
  }

  /** POST /templates answers 201 {success, template} with the template `body` describes. */
  async function expectCreated(owner: SeededAccount, body: Partial<Template>) {
    expect(await statusAndBody(await create(owner, body))).toEqual({
      status: 201,
      body: { success: true, template: expectedTemplate(owner, body) },
    })
  }

  /** POST /templates with `field` set to `value` answers 400 with the validation body for it. */
  async function expectInvalid(owner: SeededAccount, field: 'name' | 'subject', value: string, code: string) {
    expect(await statusAndBody(await create(owner, { ...content, [field]: value }))).toEqual({
      status: 400,
      body: validationBody([{ path: [field], code }]),
    })
  }

  return { create, get, put, createOk, expectCreated, expectInvalid }
}
