-- The tables the retention purge deletes from are vacuumed once a twentieth of their rows are
-- dead, not PostgreSQL's default fifth. At 10 million records the default waits for 2 million
-- dead rows: a purge of 2 million (a large Free tenant's week) left the outbox 2 GB larger and
-- unvisited, its space reusable only once a later purge or the sends' own updates added more.
-- A twentieth keeps what a purge frees reusable within a minute of it, and the outbox's bloat to
-- about a twentieth beyond its largest purge (docs/performance.md, "Scale").
alter table outbox set (autovacuum_vacuum_scale_factor = 0.05);
alter table outbox_attempts set (autovacuum_vacuum_scale_factor = 0.05);
alter table outbox_tags set (autovacuum_vacuum_scale_factor = 0.05);
