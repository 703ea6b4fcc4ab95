/**
 * GET /emails/{id} and GET /emails as one account or another, on an app whose worker retries
 * deferred mail quickly.
 */
import { beforeAll } from 'vitest'
import type { TestApp } from './app.ts'
import { TEST_RETRY, waitFor } from './queue.ts'
import { type Sender, startSender } from './sending.ts'

export interface Answer {
  status: number
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field
  body: any
}

/**
 * The /emails requests of a test file's app. Its worker tries deferred mail again 200 ms later,
 * and three transient failures end it.
 */
export function useEmailsApi(app: TestApp) {
  beforeAll(async () => {
    await app.worker({ retry: TEST_RETRY })
  })

  async function get(key: string | undefined, path: string): Promise<Answer> {
    const res = await app.request(path, key === undefined ? {} : { key })
    return { status: res.status, body: await res.json() }
  }

  function emailOf(key: string, id: number | string): Promise<Answer> {
    return get(key, `/emails/${id}`)
  }

  function list(key: string, query = ''): Promise<Answer> {
    return get(key, `/emails${query}`)
  }

  /** The email once `done` says so, as GET /emails/{id} shows it. */
  function waitForEmail(key: string, id: number, done: (email: Answer['body']['email']) => boolean) {
    return waitFor(
      async () => `email ${id}: ${JSON.stringify((await emailOf(key, id)).body)}`,
      async () => {
        const { body } = await emailOf(key, id)
        return done(body.email) ? body.email : undefined
      },
      15_000,
    )
  }

  function proSender(label: string, behaviour = {}): Promise<Sender> {
    return startSender(app, label, { plan: 'pro', behaviour })
  }

  return { get, emailOf, list, waitForEmail, proSender }
}
