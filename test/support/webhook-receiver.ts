/**
 * A real HTTP server that receives webhook deliveries, as an account's endpoint would: it keeps
 * every request (headers and raw body) and answers what the test says, or never answers.
 */
import http, { type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { verifyWebhook, type WebhookEvent } from '@mailroom/sdk'
import { afterAll } from 'vitest'

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders
  body: string
}

/** The status to answer the `n`th request (0-based) with, or `hang` to never answer. */
export type Answer = (n: number, request: ReceivedWebhook) => number | 'hang'

export interface WebhookReceiver {
  url: string
  received: ReceivedWebhook[]
  answer: Answer
  close(): Promise<void>
}

export async function startWebhookReceiver(answer: Answer = () => 200): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = []
  const receiver = { answer } as WebhookReceiver
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const request = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }
      const status = receiver.answer(received.length, request)
      received.push(request)
      if (status !== 'hang') res.writeHead(status).end('ok')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  })
}

/** A delivery checked with the SDK's verifyWebhook, with its webhook-id. */
export async function verified(
  request: ReceivedWebhook,
  secret: string,
): Promise<WebhookEvent & { id: string }> {
  const event = await verifyWebhook(request.body, request.headers, secret)
  return { ...event, id: String(request.headers['webhook-id']) }
}

/** Starts receivers for a test file, all closed after its tests. */
export function useWebhookReceivers(): (answer?: Answer) => Promise<WebhookReceiver> {
  const receivers: WebhookReceiver[] = []
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.close()))
  })
  return async (answer) => {
    const receiver = await startWebhookReceiver(answer)
    receivers.push(receiver)
    return receiver
  }
}
