-- Deploy insurance:outbox_functions to pg
-- requires: outbox_functions@v1.0
-- Dead letters: a row whose delivery failed max_attempts times (the worker's
-- OUTBOX_MAX_ATTEMPTS) gets dead_at and is no longer claimed; it is kept for an operator,
-- who lists it and puts it back in the queue (outbox.list_requests, outbox.retry_requests:
-- `python -m app outbox list|retry`). A worker may also say that an answer is not final
-- although its status would be (a 401 or 403 of our own API is a configuration error,
-- never a delivery): {"retry": true} in its result.
BEGIN;
SET LOCAL ROLE insurance_owner;

ALTER TABLE outbox.http_requests ADD COLUMN dead_at timestamptz;
COMMENT ON COLUMN outbox.http_requests.dead_at IS
  'Set when the delivery failed OUTBOX_MAX_ATTEMPTS times: never delivered again until an operator retries it';
-- The claim scans live rows only; dead rows have their own small index for the operator.
DROP INDEX outbox.http_requests_pending_idx;
CREATE INDEX http_requests_pending_idx ON outbox.http_requests (deliver_after)
  WHERE delivered_at IS NULL AND dead_at IS NULL;
CREATE INDEX http_requests_dead_idx ON outbox.http_requests (id) WHERE dead_at IS NOT NULL;

-- claim_batch: lease up to `size` due rows to `worker`; a row whose lease expired (its worker
-- died) is due again, a dead row never is. Returns {"requests": [{id, method, url, headers,
-- body, attempts}], "nextDueAt": epoch seconds of the next delayed row or null}.
CREATE OR REPLACE FUNCTION outbox.claim_batch(worker text, size integer, lease_seconds integer) RETURNS jsonb
LANGUAGE sql SET search_path = '' AS $$
  WITH due AS (
    SELECT r.id FROM outbox.http_requests r
     WHERE r.delivered_at IS NULL AND r.dead_at IS NULL AND r.deliver_after <= pg_catalog.now()
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
                   WHERE r.delivered_at IS NULL AND r.dead_at IS NULL AND r.deliver_after > pg_catalog.now()))
$$;

-- record_deliveries: the outcome of delivered rows, [{id, status, error, retry}] (status: the
-- HTTP answer or null when none came; retry: true when the worker knows the answer is not
-- final). An answer other than 408, 409, 425, 429 or 5xx is final; otherwise the row goes
-- back to the queue after 2^attempts seconds (at most an hour), or dies once it has been
-- tried max_attempts times. Only rows still leased by `worker` change. Returns how many
-- rows were done (delivered).
DROP FUNCTION outbox.record_deliveries(text, jsonb);
CREATE FUNCTION outbox.record_deliveries(worker text, results jsonb, max_attempts integer DEFAULT 20)
RETURNS integer
LANGUAGE sql SET search_path = '' AS $$
  WITH res AS (
    SELECT (x ->> 'id')::bigint AS id, (x ->> 'status')::integer AS status, x ->> 'error' AS error,
           outbox.is_final((x ->> 'status')::integer) AND NOT coalesce((x ->> 'retry')::boolean, false) AS final
      FROM pg_catalog.jsonb_array_elements(results) AS x
  ), upd AS (
    UPDATE outbox.http_requests r
       SET last_status = res.status,
           last_error = pg_catalog.left(res.error, 500),
           lease_until = NULL, leased_by = NULL,
           delivered_at = CASE WHEN res.final THEN pg_catalog.now() END,
           dead_at = CASE WHEN NOT res.final AND r.attempts >= max_attempts THEN pg_catalog.now() END,
           deliver_after = CASE WHEN res.final OR r.attempts >= max_attempts THEN r.deliver_after
                                ELSE pg_catalog.now() + pg_catalog.make_interval(
                                       secs => least(3600, power(2, least(r.attempts, 12)))) END
      FROM res
     WHERE r.id = res.id AND r.leased_by = worker AND r.delivered_at IS NULL
    RETURNING r.delivered_at
  )
  SELECT count(*) FILTER (WHERE delivered_at IS NOT NULL)::integer FROM upd
$$;
GRANT EXECUTE ON FUNCTION outbox.record_deliveries(text, jsonb, integer) TO insurance_service, insurance_app;

-- list_requests: the operator's view of the queue, newest first: dead rows only, or every
-- row not yet delivered (dead ones included). The command line's `outbox list`.
CREATE FUNCTION outbox.list_requests(_dead boolean DEFAULT false, _limit integer DEFAULT 100) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'id', r.id, 'method', r.method, 'url', r.url, 'body', r.body, 'attempts', r.attempts,
           'deliverAfter', r.deliver_after, 'deadAt', r.dead_at, 'leasedBy', r.leased_by,
           'lastStatus', r.last_status, 'lastError', r.last_error, 'createdAt', r.created_at)
           ORDER BY r.id DESC), '[]')
    FROM (SELECT * FROM outbox.http_requests r
           WHERE r.delivered_at IS NULL AND (NOT _dead OR r.dead_at IS NOT NULL)
           ORDER BY r.id DESC
           LIMIT greatest(least(coalesce(_limit, 100), 10000), 1)) r
$$;
REVOKE ALL ON FUNCTION outbox.list_requests(boolean, integer) FROM PUBLIC;

-- retry_requests: put rows back in the queue, due now with their attempts counted from zero
-- (every dead row with _all_dead). Audited as outbox.retry by `_actor`. Returns
-- [{id, result}] in id order, result one of queued (was dead or waiting), delivered
-- (already done: left alone), not_found.
CREATE FUNCTION outbox.retry_requests(_actor text, _ids bigint[], _all_dead boolean DEFAULT false)
RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _out jsonb;
BEGIN
  WITH wanted AS (
    SELECT DISTINCT w.id FROM pg_catalog.unnest(coalesce(_ids, '{}')) AS w(id)
    UNION
    SELECT r.id FROM outbox.http_requests r WHERE _all_dead AND r.dead_at IS NOT NULL AND r.delivered_at IS NULL
  ), upd AS (
    UPDATE outbox.http_requests r
       SET dead_at = NULL, attempts = 0, deliver_after = pg_catalog.now(), lease_until = NULL, leased_by = NULL
      FROM wanted WHERE r.id = wanted.id AND r.delivered_at IS NULL
    RETURNING r.id
  )
  SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'id', w.id, 'result', CASE WHEN u.id IS NOT NULL THEN 'queued'
                                      WHEN r.id IS NOT NULL THEN 'delivered' ELSE 'not_found' END)
           ORDER BY w.id), '[]')
    INTO _out
    FROM wanted w LEFT JOIN upd u ON u.id = w.id LEFT JOIN outbox.http_requests r ON r.id = w.id;
  PERFORM insurance.record_audit(_actor, 'outbox.retry', _out, 'ok',
                                 pg_catalog.jsonb_build_object('allDead', _all_dead));
  PERFORM pg_catalog.pg_notify('outbox', '');
  RETURN _out;
END
$$;
REVOKE ALL ON FUNCTION outbox.retry_requests(text, bigint[], boolean) FROM PUBLIC;

COMMIT;
