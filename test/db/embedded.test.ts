import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { firstClosedAncestor } from '../../src/db/embedded.ts'

let root: string

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'mailroom-ancestors-'))
  await chmod(root, 0o755)
})
afterAll(async () => {
  await rm(root, { recursive: true, force: true })
})

describe('the embedded database’s data dir, as root', () => {
  it('is reachable when every directory on the way lets others through', async () => {
    const dir = path.join(root, 'open', 'data')
    await mkdir(dir, { recursive: true, mode: 0o755 })
    await chmod(path.join(root, 'open'), 0o755)
    expect(await firstClosedAncestor(dir)).toBeUndefined()
  })

  it('names the first directory the postgres user could not enter', async () => {
    const closed = path.join(root, 'closed')
    const dir = path.join(closed, 'inner', 'data')
    await mkdir(dir, { recursive: true })
    await chmod(closed, 0o700)
    expect(await firstClosedAncestor(dir)).toBe(closed)
  })
})
