/**
 * A TCP proxy in front of the test app that loses responses: it forwards bytes both ways, but
 * on each of its first `lose` connections it resets the client's side as soon as the server's
 * response starts arriving. The server has done the work by then (for POST /send: the mail is
 * sent, since the response is written only after the SMTP server accepted it), and the client
 * never hears of it: the "no response at all" of the API's retry guidance.
 */
import net from 'node:net'

export interface LossyProxy {
  /** The proxy's host root, e.g. http://127.0.0.1:40123 */
  url: string
  /** The API's `{base_url}` through the proxy: `url` + `/v1` */
  baseUrl: string
  /** Connections accepted so far. */
  readonly connections: number
  /** Responses lost so far. */
  readonly lost: number
  close(): Promise<void>
}

/** `target` is the app's host root (TestApp.url). */
export async function startLossyProxy(target: string, options: { lose?: number } = {}): Promise<LossyProxy> {
  const { hostname, port } = new URL(target)
  const lose = options.lose ?? 1
  const sockets = new Set<net.Socket>()
  let connections = 0
  let lost = 0

  const track = (socket: net.Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    // A reset socket reports ECONNRESET; the other side is torn down below either way.
    socket.on('error', () => {})
  }

  const server = net.createServer((client) => {
    const doomed = connections++ < lose
    const upstream = net.connect(Number(port), hostname)
    track(client)
    track(upstream)
    client.pipe(upstream)
    if (doomed) {
      upstream.once('data', () => {
        lost++
        client.resetAndDestroy()
        upstream.destroy()
      })
    } else {
      upstream.pipe(client)
    }
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const address = server.address() as net.AddressInfo
  const url = `http://127.0.0.1:${address.port}`

  return {
    url,
    baseUrl: `${url}/v1`,
    get connections() {
      return connections
    },
    get lost() {
      return lost
    },
    close() {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
