-- Deploy insurance:outbox to pg
-- Durable outbound HTTP calls started by the database (pg_net's contract, kept in a logged
-- table so that a crash loses nothing). The worker claims due rows with a lease and
-- delivers them at least once; the functions are in outbox_functions.
-- A url may be a path ('/api/...'): the worker prefixes the API's base URL and adds the
-- service-role bearer, so that the database never holds a secret.
-- The worker knows no path of the API: a call to a url of outbox.batch_routes carries the
-- header X-Outbox-Batch with the url that accepts many of them at once (the outbox batch
-- protocol, see app/worker.py), and the worker groups rows by that header.
-- Reworked after v0.9.0 (issue 30): http_requests_webhook_emission_idx, the webhook deliveries
-- of an emission. Restated whole, so that it runs over the v0.9.0 change (IF NOT EXISTS, OR
-- REPLACE, ON CONFLICT DO NOTHING).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;
-- Over v0.9.0 the statements below find their tables and take their locks one by one (the
-- triggers of http_requests, row level security of the counts): take them first, in the order
-- the app's writes take them (a row, then its count's delta), so that under traffic the deploy
-- waits behind a transaction instead of deadlocking with it.
LOCK TABLE outbox.http_requests IN SHARE ROW EXCLUSIVE MODE;
LOCK TABLE outbox.request_count_deltas, outbox.request_counts IN ACCESS EXCLUSIVE MODE;

CREATE TABLE IF NOT EXISTS outbox.http_requests (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  method        text NOT NULL DEFAULT 'POST' CHECK (method IN ('POST', 'PUT', 'PATCH', 'GET', 'DELETE')),
  url           text NOT NULL CHECK (url ~ '^(https?://|/)'),
  headers       jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(headers) = 'object'),
  body          jsonb,
  deliver_after timestamptz NOT NULL DEFAULT now(),   -- the delayed queue
  -- squawk-ignore prefer-bigint-over-int -- delivery attempts of one row, bounded by the worker
  attempts      integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  lease_until   timestamptz,                          -- set while a worker holds the row
  leased_by     text,
  delivered_at  timestamptz,                          -- set once: done
  -- squawk-ignore prefer-bigint-over-int -- an HTTP status code
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
CREATE INDEX IF NOT EXISTS http_requests_pending_idx ON outbox.http_requests (deliver_after)
  WHERE delivered_at IS NULL AND dead_at IS NULL;
CREATE INDEX IF NOT EXISTS http_requests_dead_idx ON outbox.http_requests (id) WHERE dead_at IS NOT NULL;
-- A partner lists its own webhook deliveries, newest first.
CREATE INDEX IF NOT EXISTS http_requests_channel_idx ON outbox.http_requests (channel_id, id) WHERE channel_id IS NOT NULL;
-- /metrics: the pending webhook deliveries and the oldest of them.
CREATE INDEX IF NOT EXISTS http_requests_pending_webhook_idx ON outbox.http_requests (deliver_after)
  WHERE channel_id IS NOT NULL AND delivered_at IS NULL AND dead_at IS NULL;
-- The back-office lists every partner webhook delivery of an emission (what the partner heard).
CREATE INDEX IF NOT EXISTS http_requests_webhook_emission_idx ON outbox.http_requests (((body #>> '{data,emissionId}')::bigint))
  WHERE channel_id IS NOT NULL;
-- The retry sweep asks "is a /retry of this emission still pending?".
CREATE INDEX IF NOT EXISTS http_requests_pending_emission_idx ON outbox.http_requests (((body ->> 'emissionId')::bigint))
  WHERE delivered_at IS NULL AND body ? 'emissionId';

GRANT SELECT, INSERT, UPDATE, DELETE ON outbox.http_requests TO insurance_service;
GRANT SELECT ON outbox.http_requests TO insurance_dashboard;

CREATE TABLE IF NOT EXISTS outbox.batch_routes (
  url       text PRIMARY KEY CHECK (url ~ '^/'),
  batch_url text NOT NULL CHECK (batch_url ~ '^/')
);
COMMENT ON TABLE outbox.batch_routes IS 'API paths whose outbox calls may travel together, and the path that takes them';
INSERT INTO outbox.batch_routes (url, batch_url) VALUES
  ('/api/integrations/dispatch', '/api/integrations/dispatch-batch'),
  ('/api/integrations/dispatch-v2', '/api/integrations/dispatch-batch'),
  ('/api/integrations/retry', '/api/integrations/dispatch-batch')
ON CONFLICT (url) DO NOTHING;
GRANT SELECT ON outbox.batch_routes TO insurance_service;

CREATE OR REPLACE FUNCTION outbox._mark_batch() RETURNS trigger
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

CREATE OR REPLACE TRIGGER http_requests_mark_batch BEFORE INSERT ON outbox.http_requests
  FOR EACH ROW EXECUTE FUNCTION outbox._mark_batch();

-- How many rows are pending (not delivered, not dead) and dead, for the metrics scrape, without
-- counting the table (DESIGN.md §7: a backlog of a million rows must not make a scrape slow).
-- Statement triggers append one delta row per state a statement changes (append-only: the
-- workers and the emission transactions never wait on a shared counter row);
-- outbox._fold_request_counts() moves the deltas into the totals when the gauges are read.
CREATE TABLE IF NOT EXISTS outbox.request_counts (
  state text PRIMARY KEY CHECK (state IN ('pending', 'dead')),
  count bigint NOT NULL
);
COMMENT ON TABLE outbox.request_counts IS
  'Rows of http_requests pending (not delivered, not dead) and dead, folded from request_count_deltas';
CREATE TABLE IF NOT EXISTS outbox.request_count_deltas (
  state text NOT NULL CHECK (state IN ('pending', 'dead')),
  -- squawk-ignore prefer-bigint-over-int -- the change of one statement, folded every scrape
  delta integer NOT NULL
);
COMMENT ON TABLE outbox.request_count_deltas IS
  'Changes of request_counts written by the statement triggers of http_requests, not yet folded';
ALTER TABLE outbox.request_counts ENABLE ROW LEVEL SECURITY;        -- no policy: through the functions only
ALTER TABLE outbox.request_count_deltas ENABLE ROW LEVEL SECURITY;
INSERT INTO outbox.request_counts (state, count) VALUES ('pending', 0), ('dead', 0) ON CONFLICT (state) DO NOTHING;

CREATE OR REPLACE FUNCTION outbox._count_requests() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO outbox.request_count_deltas (state, delta)
    SELECT d.state, count(*) FROM (
      SELECT CASE WHEN n.dead_at IS NOT NULL THEN 'dead' WHEN n.delivered_at IS NULL THEN 'pending' END AS state
        FROM new_rows n) d
     WHERE d.state IS NOT NULL GROUP BY d.state;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO outbox.request_count_deltas (state, delta)
    SELECT d.state, -count(*) FROM (
      SELECT CASE WHEN o.dead_at IS NOT NULL THEN 'dead' WHEN o.delivered_at IS NULL THEN 'pending' END AS state
        FROM old_rows o) d
     WHERE d.state IS NOT NULL GROUP BY d.state;
  ELSE  -- the net change of each state: a claim changes none and writes nothing
    INSERT INTO outbox.request_count_deltas (state, delta)
    SELECT d.state, sum(d.delta) FROM (
      SELECT CASE WHEN n.dead_at IS NOT NULL THEN 'dead' WHEN n.delivered_at IS NULL THEN 'pending' END AS state,
             1 AS delta
        FROM new_rows n
      UNION ALL
      SELECT CASE WHEN o.dead_at IS NOT NULL THEN 'dead' WHEN o.delivered_at IS NULL THEN 'pending' END, -1
        FROM old_rows o) d
     WHERE d.state IS NOT NULL GROUP BY d.state HAVING sum(d.delta) <> 0;
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION outbox._count_requests() IS
  'Statement trigger of http_requests (transition tables): appends the changes of the pending and dead counts '
  'to request_count_deltas. Trigger only.';
REVOKE ALL ON FUNCTION outbox._count_requests() FROM PUBLIC;

CREATE OR REPLACE TRIGGER http_requests_count_insert AFTER INSERT ON outbox.http_requests
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox._count_requests();
CREATE OR REPLACE TRIGGER http_requests_count_update AFTER UPDATE ON outbox.http_requests
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox._count_requests();
CREATE OR REPLACE TRIGGER http_requests_count_delete AFTER DELETE ON outbox.http_requests
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox._count_requests();

CREATE OR REPLACE FUNCTION outbox._fold_request_counts() RETURNS TABLE (pending bigint, dead bigint)
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  WITH folded AS (DELETE FROM outbox.request_count_deltas RETURNING state, delta)
  UPDATE outbox.request_counts c SET count = c.count + f.delta
    FROM (SELECT folded.state, sum(folded.delta) AS delta FROM folded GROUP BY folded.state) f
   WHERE c.state = f.state;
  RETURN QUERY SELECT (SELECT c.count FROM outbox.request_counts c WHERE c.state = 'pending'),
                      (SELECT c.count FROM outbox.request_counts c WHERE c.state = 'dead');
END
$$;
COMMENT ON FUNCTION outbox._fold_request_counts() IS
  'Moves request_count_deltas into request_counts; returns (pending, dead). Two folds at once are safe (a delta '
  'is deleted, and so counted, once). Called by insurance.read_metrics as its owner.';
REVOKE ALL ON FUNCTION outbox._fold_request_counts() FROM PUBLIC;

COMMIT;
