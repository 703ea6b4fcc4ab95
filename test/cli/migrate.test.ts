import { randomBytes } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import { describe, expect, inject, it } from 'vitest'
import { connect } from '../../src/db/sql.ts'
import { openTestServices } from '../support/app.ts'
import { mailroom, ok, useCli } from '../support/cli.ts'

const cli = useCli()

describe('mailroom migrate', () => {
  it('applies every migration to an empty database, then none', async () => {
    const admin = connect(inject('database').serverUrl, 1)
    const name = `mailroom_cli_empty_${randomBytes(5).toString('hex')}`
    await admin.unsafe(`create database ${name}`)
    try {
      const url = new URL(inject('database').serverUrl)
      url.pathname = `/${name}`
      const files = (await readdir(new URL('../../src/db/migrations/', import.meta.url)))
        .filter((f) => f.endsWith('.sql'))
        .sort()
      expect(files.length).toBeGreaterThan(0)
      const open = async () => {
        const opened = await openTestServices(url.toString())
        return { services: opened, close: () => opened.close() }
      }
      expect(ok(await mailroom(cli, ['migrate'], { open }))).toEqual({ migrated: true, applied: files })
      expect(ok(await mailroom(cli, ['migrate'], { open }))).toEqual({ migrated: true, applied: [] })
      // The background worker's own schema is installed too, so workers start on a ready database.
      const probe = connect(url.toString(), 1)
      try {
        const [schema] = await probe`select 1 as present from pg_namespace where nspname = 'graphile_worker'`
        expect(schema).toEqual({ present: 1 })
      } finally {
        await probe.end()
      }
    } finally {
      await admin.unsafe(`drop database if exists ${name} with (force)`)
      await admin.end()
    }
  })
})
