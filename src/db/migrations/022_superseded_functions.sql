-- Functions that are no longer wanted. Migrations applied to a database before this one may
-- have left them there (one of a signature since changed, or one since replaced): the functions
-- wanted are made from src/db/functions after the migrations, at every start, and those leave
-- alone any function they do not name.
drop function if exists mailroom_batch_end_event(integer, integer, text);
drop function if exists mailroom_send_attempt(integer, integer, text, text[], text[], text[], text, text, text, text,
  bytea, integer, integer, integer, text, float8, float8);
