-- Deploy insurance:outbox_functions to pg
-- requires: outbox
-- The outbox's API (pg_net's shape) and the worker's verbs:
--   outbox.http_post(url, body, headers, deliver_after)  enqueue one call, durable, and NOTIFY
--   outbox.claim_batch(worker, size, lease_seconds)       lease due rows (FOR UPDATE SKIP LOCKED)
--   outbox.record_deliveries(worker, results)             done, or back off and retry later
--   outbox.release(worker, ids)                           give leased rows back (shutdown)
-- A url may be a path ('/api/...'): the worker prefixes the API's base URL and adds the
-- service-role bearer, so that the database never holds a secret.
BEGIN;
SET LOCAL ROLE insurance_owner;

ALTER TABLE outbox.http_requests DROP CONSTRAINT http_requests_url_check;
ALTER TABLE outbox.http_requests ADD CONSTRAINT http_requests_url_check CHECK (url ~ '^(https?://|/)');
-- The retry sweep asks "is a /retry of this emission still pending?".
CREATE INDEX http_requests_pending_emission_idx ON outbox.http_requests (((body ->> 'emissionId')::bigint))
  WHERE delivered_at IS NULL AND body ? 'emissionId';

-- http_post: one durable outbound call; returns its id. Notifies channel 'outbox' with the
-- epoch of deliver_after (identical payloads of one transaction collapse into one notice).
CREATE FUNCTION outbox.http_post(url text, body jsonb DEFAULT '{}', headers jsonb DEFAULT '{}',
                                 deliver_after timestamptz DEFAULT now()) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _id bigint;
  _at timestamptz := greatest(coalesce(deliver_after, pg_catalog.now()), pg_catalog.now());
BEGIN
  INSERT INTO outbox.http_requests (url, body, headers, deliver_after)
  VALUES (url, body, coalesce(headers, '{}'), _at)
  RETURNING id INTO _id;
  PERFORM pg_catalog.pg_notify('outbox', CASE WHEN _at <= pg_catalog.now() THEN ''
                                              ELSE pg_catalog.floor(extract(epoch FROM _at))::text END);
  RETURN _id;
END
$$;
REVOKE ALL ON FUNCTION outbox.http_post(text, jsonb, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.http_post(text, jsonb, jsonb, timestamptz) TO insurance_service;

-- claim_batch: lease up to `size` due rows to `worker`; a row whose lease expired (its worker
-- died) is due again. Returns {"requests": [{id, method, url, headers, body, attempts}],
-- "nextDueAt": epoch seconds of the next delayed row or null}.
CREATE FUNCTION outbox.claim_batch(worker text, size integer, lease_seconds integer) RETURNS jsonb
LANGUAGE sql SET search_path = '' AS $$
  WITH due AS (
    SELECT r.id FROM outbox.http_requests r
     WHERE r.delivered_at IS NULL AND r.deliver_after <= pg_catalog.now()
       AND (r.lease_until IS NULL OR r.lease_until < pg_catalog.now())
     ORDER BY r.deliver_after
     LIMIT size
     FOR UPDATE SKIP LOCKED
  ), leased AS (
    UPDATE outbox.http_requests r
       SET lease_until = pg_catalog.now() + pg_catalog.make_interval(secs => lease_seconds),
           leased_by = worker, attempts = r.attempts + 1
      FROM due WHERE r.id = due.id
    RETURNING r.id, r.method, r.url, r.headers, r.body, r.attempts
  )
  SELECT pg_catalog.jsonb_build_object(
    'requests', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.to_jsonb(l) ORDER BY l.id) FROM leased l), '[]'),
    'nextDueAt', (SELECT extract(epoch FROM min(r.deliver_after)) FROM outbox.http_requests r
                   WHERE r.delivered_at IS NULL AND r.deliver_after > pg_catalog.now()))
$$;
GRANT EXECUTE ON FUNCTION outbox.claim_batch(text, integer, integer) TO insurance_service, insurance_app;

-- is_final: a delivery answered with this status needs no retry (null: no answer came).
CREATE FUNCTION outbox.is_final(status integer) RETURNS boolean
LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
  SELECT status IS NOT NULL AND status NOT IN (408, 409, 425, 429) AND status < 500
$$;
GRANT EXECUTE ON FUNCTION outbox.is_final(integer) TO insurance_service;

-- record_deliveries: the outcome of delivered rows, [{id, status, error}] (status: the HTTP
-- answer or null when none came). An answer other than 408, 409, 425, 429 or 5xx is final;
-- otherwise the row goes back to the queue after 2^attempts seconds (at most an hour).
-- Only rows still leased by `worker` change. Returns how many rows were done.
CREATE FUNCTION outbox.record_deliveries(worker text, results jsonb) RETURNS integer
LANGUAGE sql SET search_path = '' AS $$
  WITH res AS (
    SELECT (x ->> 'id')::bigint AS id, (x ->> 'status')::integer AS status, x ->> 'error' AS error
      FROM pg_catalog.jsonb_array_elements(results) AS x
  ), upd AS (
    UPDATE outbox.http_requests r
       SET last_status = res.status,
           last_error = pg_catalog.left(res.error, 500),
           lease_until = NULL, leased_by = NULL,
           delivered_at = CASE WHEN outbox.is_final(res.status) THEN pg_catalog.now() END,
           deliver_after = CASE WHEN outbox.is_final(res.status) THEN r.deliver_after
                                ELSE pg_catalog.now() + pg_catalog.make_interval(
                                       secs => least(3600, power(2, least(r.attempts, 12)))) END
      FROM res
     WHERE r.id = res.id AND r.leased_by = worker AND r.delivered_at IS NULL
    RETURNING r.delivered_at
  )
  SELECT count(*) FILTER (WHERE delivered_at IS NOT NULL)::integer FROM upd
$$;

GRANT EXECUTE ON FUNCTION outbox.record_deliveries(text, jsonb) TO insurance_service, insurance_app;

-- release: give rows leased by `worker` back to the queue at once (a clean shutdown).
CREATE FUNCTION outbox.release(worker text, ids bigint[]) RETURNS integer
LANGUAGE sql SET search_path = '' AS $$
  WITH upd AS (
    UPDATE outbox.http_requests r SET lease_until = NULL, leased_by = NULL,
                                      attempts = greatest(r.attempts - 1, 0)
     WHERE r.id = ANY (ids) AND r.leased_by = worker AND r.delivered_at IS NULL
    RETURNING 1)
  SELECT count(*)::integer FROM upd
$$;
GRANT EXECUTE ON FUNCTION outbox.release(text, bigint[]) TO insurance_service, insurance_app;

COMMIT;
