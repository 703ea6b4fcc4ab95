-- What became of each recipient of a message: accepted, refused for good, or deferred (a
-- temporary refusal: queued mail tries it again), with the server's reply. Null until the first
-- attempt: every recipient is then still to be tried.
alter table outbox add column recipients jsonb;

-- Every attempt of every message, recipient by recipient, as the server answered it.
create table outbox_attempts (
  id bigint generated always as identity primary key,
  outbox_id integer not null references outbox (id) on delete cascade,
  attempt integer not null,
  at timestamptz not null default now(),
  -- delivered: the server took the message for at least one recipient; refused/deferred: it
  -- took it for none; pushback: it asked the whole connection to back off; unreachable: no
  -- session could be had.
  outcome text not null check (outcome in ('delivered', 'refused', 'deferred', 'pushback', 'unreachable')),
  reply text,
  recipients jsonb not null
);
create index outbox_attempts_record on outbox_attempts (outbox_id, id);

alter table connections
  -- Provider failures within one back-off window count once toward a pause: a counted failure
  -- opens a window as long as the wait it causes (the queue's back-off, /send's Retry-After).
  add column failure_window_until timestamptz,
  -- Who paused the connection: an operator; the service after the provider kept pushing back
  -- (a timed pause); or the service after the server kept being out of reach (it is probed, and
  -- resumed as soon as it answers).
  add column paused_by text check (paused_by in ('operator', 'pushback', 'unreachable')),
  -- The provider's last reply when the service paused it.
  add column pause_reason text;
update connections set paused_by = 'operator' where paused_until = 'infinity';
update connections set paused_by = 'pushback' where paused_until is not null and paused_by is null;
