import { batchContent } from '../db/batches.ts'
import type { Db } from '../db/sql.ts'
import { compileContent, type Payload, type RenderedContent } from '../templates/placeholders.ts'

type Render = (payload: Payload) => RenderedContent

/** Contents one queue run keeps compiled: its connection's batches being sent at once. */
const KEPT = 4

/**
 * A batch's contents, read and compiled once per queue run rather than once per recipient: a
 * batch's messages are many renderings of one content, which never changes once stored. The
 * lanes of a run share one read of each.
 */
export class BatchContents {
  readonly #compiled = new Map<number, Promise<Render>>()

  render(db: Db, contentId: number, payload: Payload): Promise<RenderedContent> {
    return this.#compiledContent(db, contentId).then((render) => render(payload))
  }

  #compiledContent(db: Db, contentId: number): Promise<Render> {
    const kept = this.#compiled.get(contentId)
    if (kept) return kept
    const compiled = batchContent(db, contentId).then((content) => {
      if (!content) throw new Error(`batch content ${contentId} is missing`)
      return compileContent(content)
    })
    // A failed read is tried again by the next message, not remembered.
    compiled.catch(() => this.#compiled.delete(contentId))
    this.#compiled.set(contentId, compiled)
    const oldest = this.#compiled.keys().next().value
    if (this.#compiled.size > KEPT && oldest !== undefined) this.#compiled.delete(oldest)
    return compiled
  }
}
