import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

const DB = path.resolve(import.meta.dirname, '../../src/db')

/** The `.sql` files of a folder of src/db, each with its text less its `--` comments. */
async function statements(folder: string): Promise<{ file: string; text: string }[]> {
  const files = (await readdir(path.join(DB, folder))).filter((f) => f.endsWith('.sql')).sort()
  return Promise.all(
    files.map(async (file) => ({
      file: `${folder}/${file}`,
      text: (await readFile(path.join(DB, folder, file), 'utf8')).replace(/--.*$/gm, ''),
    })),
  )
}

// What defines code in the database rather than schema.
const DEFINES = /\bcreate\s+(?:or\s+replace\s+)?(?:function|procedure|trigger)\b/i
// A definition that fails when what it defines exists already.
const DEFINES_ONCE = /\bcreate\s+(?!or\s+replace\b)(?:function|procedure|trigger)\b/i

describe('where the database’s functions are defined', () => {
  it('no migration defines a function or trigger: src/db/functions does, applied at every start', async () => {
    const offenders = (await statements('migrations')).filter((m) => DEFINES.test(m.text))
    expect(offenders.map((m) => m.file)).toEqual([])
  })

  it('every file in src/db/functions can be applied again: it replaces what it defines', async () => {
    const files = await statements('functions')
    expect(files.length).toBeGreaterThan(0)
    expect(files.filter((f) => DEFINES_ONCE.test(f.text)).map((f) => f.file)).toEqual([])
  })

  it('the checks recognise a definition', () => {
    expect(DEFINES.test('create function mailroom_now() returns timestamptz')).toBe(true)
    expect(DEFINES.test('create or replace function\n  mailroom_now()')).toBe(true)
    expect(DEFINES.test('create trigger t after update on x')).toBe(true)
    expect(DEFINES.test('create table functions (id int)')).toBe(false)
    expect(DEFINES.test('drop function if exists mailroom_send_attempt(integer)')).toBe(false)
    expect(DEFINES_ONCE.test('create function f()')).toBe(true)
    expect(DEFINES_ONCE.test('create or replace function f()')).toBe(false)
    expect(DEFINES_ONCE.test('create or replace trigger t')).toBe(false)
  })
})
