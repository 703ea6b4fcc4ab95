-- A batch's recipients are written at its creation to a narrow store, in blocks (one row holds a
-- thousand recipients, in order, as a JSON array of [email, payload, member id]), by one
-- insert-select from the audience: the request never writes one wide outbox record per member,
-- nor even one row per member (each row costs its index entry and foreign-key check). The worker
-- moves them into the outbox in bounded chunks, a little ahead of delivery, so that the outbox
-- never holds a large batch's whole list at once. A recipient is in exactly one of the two: each
-- chunk takes its recipients off the store and inserts their records in one transaction.
create table batch_recipients (
  batch_id integer not null references batches (id) on delete cascade,
  -- The block's place in the batch's order (the audience's member order).
  block integer not null,
  recipients jsonb not null,
  primary key (batch_id, block)
);

-- What the moved records need that the batch does not otherwise keep: its content (rendered per
-- recipient when sent), the sending address of its connection at creation, the request that
-- created it (its records are logged under that id), and the audience whose members' unsubscribe
-- links the records carry (signed as they are moved; null for a `recipients` batch).
alter table batches
  add column content_id integer references batch_contents (id),
  add column from_address text,
  add column request_id text,
  add column unsubscribe_audience_id integer;
