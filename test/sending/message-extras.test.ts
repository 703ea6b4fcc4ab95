/**
 * Attachments are decoded a slice at a time, each slice on a turn of the event loop of its own:
 * a file of many megabytes holds other requests for no more than a slice's work.
 */
import { createHash, randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { ValidationIssue } from '../../src/app-error.ts'
import { messageExtras } from '../../src/sending/message-extras.ts'
import { countTurns } from '../support/event-loop-turns.ts'

describe('decoding attachments', () => {
  it('decodes a 13 MiB base64 text over many turns of the event loop, to the very bytes', async () => {
    const bytes = randomBytes(10 * 1024 * 1024)
    const content = bytes.toString('base64')
    expect(content.length).toBeGreaterThan(13 * 1024 * 1024)
    const issues: ValidationIssue[] = []
    const turns = countTurns()
    const extras = await messageExtras({ attachments: [{ filename: 'big.bin', content }] }, issues)
    turns.stop()
    expect(issues).toEqual([])
    expect(extras.attachments[0]?.content.equals(bytes)).toBe(true)
    expect(extras.attachments[0]?.sha256).toBe(createHash('sha256').update(bytes).digest('hex'))
    // One slice of a mebibyte of text a turn: at least thirteen turns passed while decoding.
    expect(turns.count).toBeGreaterThanOrEqual(13)
  })

  it('refuses padding that ends a slice before the last', async () => {
    const content = `${'A'.repeat(1024 * 1024 - 4)}AA==AAAA`
    const issues: ValidationIssue[] = []
    await messageExtras({ attachments: [{ filename: 'a.bin', content }] }, issues)
    expect(issues.map((issue) => issue.path)).toEqual([['attachments', 0, 'content']])
  })
})
