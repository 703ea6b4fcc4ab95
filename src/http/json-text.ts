const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const OPEN_ARRAY = 0x5b
const OPEN_OBJECT = 0x7b
const CLOSE_ARRAY = 0x5d
const CLOSE_OBJECT = 0x7d

/** Which bound a JSON text passes first, if any. */
export type JsonTextExcess = 'depth' | 'values' | 'keys' | undefined

export interface JsonTextBounds {
  maxDepth: number
  /** Keys and array elements in the whole text. */
  maxValues: number
  /** Keys in any one object: a parser's cost for each key of an object grows past a thousand or so. */
  maxKeys: number
}

/**
 * Which of its bounds a JSON text passes, told the text in parts as they arrive (strings
 * skipped), so that a body can be refused at the first bound passed, before the rest of it is
 * even received, and the parser never meets a body whose size in values it has not been told.
 * A value is counted at each comma and at the first item of each container. Malformed text is
 * the parser's to refuse; this only counts.
 */
export class JsonTextCounter {
  // Per level of nesting: whether it is an object, and how many keys it has so far.
  readonly #isObject: Uint8Array
  readonly #keys: Uint32Array
  #depth = 0
  #values = 0
  #opened = false
  #inString = false
  #escaped = false

  constructor(readonly bounds: JsonTextBounds) {
    this.#isObject = new Uint8Array(bounds.maxDepth + 1)
    this.#keys = new Uint32Array(bounds.maxDepth + 1)
  }

  /** The next part of the text: the first bound it passes, if any. */
  feed(part: string): JsonTextExcess {
    for (let i = 0; i < part.length; i++) {
      if (this.#inString) {
        i = this.#skipString(part, i)
        continue
      }
      const code = part.charCodeAt(i)
      if (code <= 0x20) continue
      if (code === CLOSE_ARRAY || code === CLOSE_OBJECT) {
        this.#depth--
        this.#opened = false
        continue
      }
      if (code === COMMA || this.#opened) {
        this.#opened = false
        const excess = this.#countValue()
        if (excess) return excess
        if (code === COMMA) continue
      }
      if (code === QUOTE) {
        this.#inString = true
        i = this.#skipString(part, i + 1)
      } else if (code === OPEN_ARRAY || code === OPEN_OBJECT) {
        if (++this.#depth > this.bounds.maxDepth) return 'depth'
        this.#isObject[this.#depth] = code === OPEN_OBJECT ? 1 : 0
        this.#keys[this.#depth] = 0
        this.#opened = true
      }
    }
    return undefined
  }

  #countValue(): JsonTextExcess {
    if (++this.#values > this.bounds.maxValues) return 'values'
    if (this.#isObject[this.#depth] !== 1) return undefined
    const keys = (this.#keys[this.#depth] ?? 0) + 1
    this.#keys[this.#depth] = keys
    return keys > this.bounds.maxKeys ? 'keys' : undefined
  }

  /** Where the string being read ends in `part` (its end when the string goes on). */
  #skipString(part: string, from: number): number {
    for (let i = from; i < part.length; i++) {
      if (this.#escaped) this.#escaped = false
      else {
        const code = part.charCodeAt(i)
        if (code === BACKSLASH) this.#escaped = true
        else if (code === QUOTE) {
          this.#inString = false
          return i
        }
      }
    }
    return part.length
  }
}

/** Which of `bounds` a whole JSON text passes, if any. */
export function jsonTextExcess(text: string, bounds: JsonTextBounds): JsonTextExcess {
  return new JsonTextCounter(bounds).feed(text)
}
