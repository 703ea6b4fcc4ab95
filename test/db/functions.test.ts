import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { migrateDatabase } from '../../src/db/migrate.ts'
import type { Sql } from '../../src/db/sql.ts'
import { createLogger } from '../../src/log.ts'
import { createTestDatabase, type TestDatabase } from '../support/database.ts'

const log = createLogger('silent')

/** Every function and trigger of ours, as PostgreSQL prints its definition. */
async function definitions(sql: Sql): Promise<Record<string, string>> {
  const rows = await sql<{ name: string; definition: string }[]>`
    select p.oid::regprocedure::text as name, pg_get_functiondef(p.oid) as definition
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'public' and (starts_with(p.proname, 'mailroom_') or p.proname = 'api_timestamp')
    union all
    select 'trigger ' || t.tgname, pg_get_triggerdef(t.oid)
    from pg_trigger t where starts_with(t.tgname, 'mailroom_') and not t.tgisinternal`
  return Object.fromEntries(rows.map((r) => [r.name, r.definition]))
}

/**
 * What migrations that defined the functions themselves could leave in a database they had
 * taken only part of the way: a function since replaced (mailroom_send_attempt), one whose
 * signature changed since (mailroom_batch_end_event), an older body (api_timestamp), and none
 * of what later migrations added (mailroom_send_attempts, the job queue's trigger).
 */
const EARLIER_FUNCTIONS = `
  drop trigger mailroom_announce_released_job_queue on graphile_worker._private_job_queues;
  drop function mailroom_announce_released_job_queue();
  drop function mailroom_send_attempts(integer, integer, jsonb, integer, integer, integer, text, float8, float8);
  drop function mailroom_batch_end_event(integer, integer[], text[]);
  create function mailroom_batch_end_event(batch integer, settled integer, settled_status text)
    returns table (account_id integer, type text, data jsonb)
    language sql as $$ select null::integer, null::text, null::jsonb where false $$;
  create function mailroom_send_attempt(integer, integer, text, text[], text[], text[], text, text, text,
    text, bytea, integer, integer, integer, text, float8, float8) returns void language sql as '';
  create or replace function api_timestamp(t timestamptz) returns text
    language sql immutable as $$ select t::text $$;
  delete from mailroom_migrations where name = '022_superseded_functions.sql';`

describe('the database’s functions', () => {
  let db: TestDatabase

  beforeEach(async () => {
    db = await createTestDatabase()
  })
  afterEach(() => db.drop())

  it('are made at every start, and making them again changes nothing', async () => {
    const fresh = await definitions(db.sql)
    expect(Object.keys(fresh).sort()).toEqual([
      'api_timestamp(timestamp with time zone)',
      'mailroom_announce_released_job_queue()',
      'mailroom_attachment_contents_end()',
      'mailroom_batch_end_event(integer,integer[],text[])',
      'mailroom_clock()',
      'mailroom_now()',
      'mailroom_outbox_tags_added()',
      'mailroom_outbox_tags_changed()',
      'mailroom_outbox_tags_removed()',
      'mailroom_recipient_addresses(text[],text[],text[])',
      'mailroom_send_attempts(integer,integer,jsonb,integer,integer,integer,text,double precision,double precision)',
      'mailroom_take_units(integer,integer,integer,integer,text,double precision,double precision,integer)',
      'trigger mailroom_announce_released_job_queue',
      'trigger mailroom_attachment_contents_end',
      'trigger mailroom_outbox_tags_added',
      'trigger mailroom_outbox_tags_changed',
      'trigger mailroom_outbox_tags_removed',
    ])
    expect(await migrateDatabase(db.sql, db.url, log)).toEqual([])
    expect(await migrateDatabase(db.sql, db.url, log)).toEqual([])
    expect(await definitions(db.sql)).toEqual(fresh)
  })

  it('of a database migrated when migrations defined them end as a fresh database’s are', async () => {
    const fresh = await definitions(db.sql)
    await db.sql.unsafe(EARLIER_FUNCTIONS)
    expect(await definitions(db.sql)).not.toEqual(fresh)
    expect(await migrateDatabase(db.sql, db.url, log)).toEqual(['022_superseded_functions.sql'])
    expect(await definitions(db.sql)).toEqual(fresh)
  })
})
