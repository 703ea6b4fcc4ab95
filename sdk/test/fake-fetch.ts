import type { FetchLike } from '../src/index.js'

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
