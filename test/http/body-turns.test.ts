/**
 * One account's large bodies are read one at a time, each on a fresh pass of the event loop;
 * another account's never wait for them.
 */
import { describe, expect, it } from 'vitest'
import { takeTurn } from '../../src/http/body-turns.ts'

const settled = async (promise: Promise<unknown>) => {
  let done = false
  void promise.then(() => {
    done = true
  })
  await new Promise((resolve) => setTimeout(resolve, 20))
  return done
}

describe('turns for large bodies', () => {
  it('gives an account its turns in order, one at a time, and other accounts theirs meanwhile', async () => {
    const endFirst = await takeTurn(1)
    const second = takeTurn(1)
    const third = takeTurn(1)
    expect(await settled(second)).toBe(false)
    const other = takeTurn(2)
    expect(await settled(other)).toBe(true)
    endFirst()
    expect(await settled(second)).toBe(true)
    expect(await settled(third)).toBe(false)
    ;(await second)()
    ;(await third)()
    ;(await other)()
    // Every turn ended: the next one is given at once.
    expect(await settled(takeTurn(1).then((end) => end()))).toBe(true)
  })
})
