import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import * as graphileInternals from '../../src/db/graphile-internals.ts'
import * as nodemailerInternals from '../../src/smtp/nodemailer-internals.ts'

const SRC = path.resolve(import.meta.dirname, '../../src')

/** The source files of src/ (not the SQL) that name any of `patterns`. */
async function filesNaming(patterns: RegExp): Promise<string[]> {
  const entries = await readdir(SRC, { withFileTypes: true, recursive: true })
  const found: string[] = []
  for (const entry of entries) {
    if (!entry.isFile() || !/\.tsx?$/.test(entry.name)) continue
    const file = path.join(entry.parentPath, entry.name)
    if (patterns.test(await readFile(file, 'utf8'))) found.push(path.relative(SRC, file))
  }
  return found
}

describe('third-party internals', () => {
  it('start on the versions their internals were written against', () => {
    expect(() => nodemailerInternals.checkPinnedVersion()).not.toThrow()
    expect(() => graphileInternals.checkPinnedVersion()).not.toThrow()
  })

  it('refuse another version of nodemailer with one message naming both versions', () => {
    expect(() => nodemailerInternals.checkPinnedVersion('10.7.0')).toThrow(
      'nodemailer 10.7.0 is installed, but Mailroom relies on internals of nodemailer 10.6.0 ' +
        '(docs/architecture.md, "Third-party internals"): install nodemailer 10.6.0, or check ' +
        'each of those internals against 10.7.0 and then move the pin',
    )
  })

  it('refuse another version of graphile-worker with one message naming both versions', () => {
    expect(() => graphileInternals.checkPinnedVersion('0.18.0')).toThrow(
      'graphile-worker 0.18.0 is installed, but Mailroom relies on internals of graphile-worker 0.17.3 ' +
        '(docs/architecture.md, "Third-party internals"): install graphile-worker 0.17.3, or check ' +
        'each of those internals against 0.18.0 and then move the pin',
    )
  })

  it("name nodemailer's private parts in one module", async () => {
    expect(
      await filesNaming(/nodemailer\/lib\/|(?<!\w)_(queue|connections|readableState|failed|closed)\b/),
    ).toEqual([path.join('smtp', 'nodemailer-internals.ts')])
  })

  it("name graphile-worker's private tables in one module", async () => {
    expect(await filesNaming(/graphile_worker\._private_/)).toEqual([
      path.join('db', 'graphile-internals.ts'),
    ])
  })
})
