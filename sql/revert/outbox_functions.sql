-- Revert insurance:outbox_functions from pg (back to @v1.0: no dead letters; dead rows are
-- given back to the queue, as the old worker would have kept retrying them)
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP FUNCTION outbox.retry_requests(text, bigint[], boolean);
DROP FUNCTION outbox.list_requests(boolean, integer);
DROP FUNCTION outbox.record_deliveries(text, jsonb, integer);
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

CREATE OR REPLACE FUNCTION outbox.claim_batch(worker text, size integer, lease_seconds integer) RETURNS jsonb
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

DROP INDEX outbox.http_requests_dead_idx;
DROP INDEX outbox.http_requests_pending_idx;
CREATE INDEX http_requests_pending_idx ON outbox.http_requests (deliver_after) WHERE delivered_at IS NULL;
ALTER TABLE outbox.http_requests DROP COLUMN dead_at;
COMMIT;
