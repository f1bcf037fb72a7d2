-- Deploy insurance:outbox to pg
-- requires: schemas
-- Durable outbound HTTP calls started by the database (pg_net's contract, kept in a logged
-- table so that a crash loses nothing). The worker claims due rows with a lease and
-- delivers them at least once; the functions come with the emission pipeline change.
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE TABLE outbox.http_requests (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  method        text NOT NULL DEFAULT 'POST' CHECK (method IN ('POST', 'PUT', 'PATCH', 'GET', 'DELETE')),
  url           text NOT NULL CHECK (url ~ '^https?://'),
  headers       jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(headers) = 'object'),
  body          jsonb,
  deliver_after timestamptz NOT NULL DEFAULT now(),   -- the delayed queue
  attempts      integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  lease_until   timestamptz,                          -- set while a worker holds the row
  leased_by     text,
  delivered_at  timestamptz,                          -- set once: done
  last_status   integer,
  last_error    text,
  created_at    timestamptz NOT NULL DEFAULT now()
);
-- Workers look for undelivered rows in deliver_after order.
CREATE INDEX http_requests_pending_idx ON outbox.http_requests (deliver_after)
  WHERE delivered_at IS NULL;
COMMENT ON TABLE outbox.http_requests IS 'Outbound HTTP calls queued by the database, delivered by the worker';

GRANT SELECT, INSERT, UPDATE, DELETE ON outbox.http_requests TO insurance_service;
GRANT SELECT ON outbox.http_requests TO insurance_dashboard;

COMMIT;
