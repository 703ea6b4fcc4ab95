import { createClient, type FetchLike, type Template } from '../src/index.js'

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', ...headers },
  })
}

/** A Response (cloned per request), or a function of the request giving one. */
export type Answer = Response | ((request: Request) => Response | Promise<Response>)

/** A fake fetch answering `answer` and recording the requests it got. */
export function fakeFetch(answer: Answer) {
  const requests: Request[] = []
  const fetch: FetchLike = async (input) => {
    requests.push(input)
    return typeof answer === 'function' ? answer(input) : answer.clone()
  }
  return { fetch, requests }
}

export const BASE = 'http://127.0.0.1:3000/v1'
export const KEY = 'mr_test_0123456789'

/** A client of BASE with KEY whose requests `answer` answers; the requests it made. */
export function clientAnswering(answer: Answer) {
  const fake = fakeFetch(answer)
  return { client: createClient({ baseUrl: BASE, apiKey: KEY, fetch: fake.fetch }), requests: fake.requests }
}

export const TEMPLATE: Template = {
  id: 12,
  user_id: 3,
  name: 'Renewal reminder',
  subject: 'Your plan renews soon, {{first_name}}',
  text_body: 'Hi {{first_name}}',
  html_body: null,
  created_at: '2025-01-05 10:00:00',
  updated_at: '2025-01-05 10:00:00',
}

export const EMAIL = { to: 'ada@example.com', subject: 'Hi', text_body: 'Hello' }
