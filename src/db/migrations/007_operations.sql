-- One connection may send up to 1000 messages a second (a rate of 1 to 60000 a minute).
alter table connections drop constraint connections_rate_check;
alter table connections add constraint connections_rate_check check (rate between 1 and 60000);

-- The API request that queued the message (its X-Request-Id), so that the worker's log lines
-- about it carry the same id as the request's.
alter table outbox add column request_id text;
