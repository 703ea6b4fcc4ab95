-- A connection whose server was found out of reach by its queue: its queue waits until this
-- instant (mailroom_now() time) or until a probe finds the server answering, whichever comes
-- first, so that one probe speaks for the connection instead of every message behind it
-- spending a try of its own. Not null while the server is taken for out of reach (probes go on
-- past the instant, and through a pause); null once it answers.
alter table connections add column unreachable_until timestamptz;
-- Connections paused as out of reach are probed on this mark from now on.
update connections set unreachable_until = now() where paused_by = 'unreachable' and paused_until > now();
