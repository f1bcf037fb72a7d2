-- Deploy insurance:outbox to pg
-- requires: schemas
-- Durable outbound HTTP calls started by the database (pg_net's contract, kept in a logged
-- table so that a crash loses nothing). The worker claims due rows with a lease and
-- delivers them at least once; the functions are in outbox_functions.
-- A url may be a path ('/api/...'): the worker prefixes the API's base URL and adds the
-- service-role bearer, so that the database never holds a secret.
-- The worker knows no path of the API: a call to a url of outbox.batch_routes carries the
-- header X-Outbox-Batch with the url that accepts many of them at once (the outbox batch
-- protocol, see app/worker.py), and the worker groups rows by that header.
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE TABLE outbox.http_requests (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  method        text NOT NULL DEFAULT 'POST' CHECK (method IN ('POST', 'PUT', 'PATCH', 'GET', 'DELETE')),
  url           text NOT NULL CHECK (url ~ '^(https?://|/)'),
  headers       jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(headers) = 'object'),
  body          jsonb,
  deliver_after timestamptz NOT NULL DEFAULT now(),   -- the delayed queue
  attempts      integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  lease_until   timestamptz,                          -- set while a worker holds the row
  leased_by     text,
  delivered_at  timestamptz,                          -- set once: done
  last_status   integer,
  last_error    text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  dead_at       timestamptz,
  channel_id    uuid                                  -- a partner webhook's channel (partner_webhooks)
);
COMMENT ON TABLE outbox.http_requests IS 'Outbound HTTP calls queued by the database, delivered by the worker';
COMMENT ON COLUMN outbox.http_requests.url IS 'An absolute http(s) URL, or a path of this API (the worker adds base URL and service bearer)';
COMMENT ON COLUMN outbox.http_requests.deliver_after IS 'Not delivered before this time: the delayed queue';
COMMENT ON COLUMN outbox.http_requests.lease_until IS 'Set while a worker holds the row; an expired lease makes the row due again';
COMMENT ON COLUMN outbox.http_requests.dead_at IS
  'Set when the delivery failed OUTBOX_MAX_ATTEMPTS times: never delivered again until an operator retries it';
COMMENT ON COLUMN outbox.http_requests.channel_id IS
  'The partner channel of a webhook delivery (its secret signs it, it lists it); NULL for every other call';
-- Workers look for live undelivered rows in deliver_after order; dead rows have their own
-- small index for the operator.
CREATE INDEX http_requests_pending_idx ON outbox.http_requests (deliver_after)
  WHERE delivered_at IS NULL AND dead_at IS NULL;
CREATE INDEX http_requests_dead_idx ON outbox.http_requests (id) WHERE dead_at IS NOT NULL;
-- A partner lists its own webhook deliveries, newest first.
CREATE INDEX http_requests_channel_idx ON outbox.http_requests (channel_id, id) WHERE channel_id IS NOT NULL;
-- /metrics: the pending webhook deliveries and the oldest of them.
CREATE INDEX http_requests_pending_webhook_idx ON outbox.http_requests (deliver_after)
  WHERE channel_id IS NOT NULL AND delivered_at IS NULL AND dead_at IS NULL;
-- The retry sweep asks "is a /retry of this emission still pending?".
CREATE INDEX http_requests_pending_emission_idx ON outbox.http_requests (((body ->> 'emissionId')::bigint))
  WHERE delivered_at IS NULL AND body ? 'emissionId';

GRANT SELECT, INSERT, UPDATE, DELETE ON outbox.http_requests TO insurance_service;
GRANT SELECT ON outbox.http_requests TO insurance_dashboard;

CREATE TABLE outbox.batch_routes (
  url       text PRIMARY KEY CHECK (url ~ '^/'),
  batch_url text NOT NULL CHECK (batch_url ~ '^/')
);
COMMENT ON TABLE outbox.batch_routes IS 'API paths whose outbox calls may travel together, and the path that takes them';
INSERT INTO outbox.batch_routes (url, batch_url) VALUES
  ('/api/integrations/dispatch', '/api/integrations/dispatch-batch'),
  ('/api/integrations/dispatch-v2', '/api/integrations/dispatch-batch'),
  ('/api/integrations/retry', '/api/integrations/dispatch-batch');
GRANT SELECT ON outbox.batch_routes TO insurance_service;

CREATE FUNCTION outbox._mark_batch() RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _batch text;
BEGIN
  IF NEW.method = 'POST' THEN
    SELECT b.batch_url INTO _batch FROM outbox.batch_routes b WHERE b.url = NEW.url;
    IF FOUND THEN
      NEW.headers := coalesce(NEW.headers, '{}') || pg_catalog.jsonb_build_object('X-Outbox-Batch', _batch);
    END IF;
  END IF;
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION outbox._mark_batch() IS
  'BEFORE INSERT trigger of http_requests: a POST to a url of batch_routes gets the header X-Outbox-Batch naming its batch url. Trigger only.';
REVOKE ALL ON FUNCTION outbox._mark_batch() FROM PUBLIC;

CREATE TRIGGER http_requests_mark_batch BEFORE INSERT ON outbox.http_requests
  FOR EACH ROW EXECUTE FUNCTION outbox._mark_batch();

COMMIT;
