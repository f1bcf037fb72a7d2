-- Deploy insurance:outbox_requests to pg
-- The outbox's API (pg_net's shape) and the worker's verbs:
--   outbox.http_post(url, body, headers, deliver_after)  enqueue one call, durable, and NOTIFY
--   outbox.claim_batch(worker, size, lease_seconds)       lease due rows (FOR UPDATE SKIP LOCKED)
--   outbox.record_deliveries(worker, results)             done, or back off and retry later
--   outbox.release(worker, ids)                           give leased rows back (shutdown)
-- Dead letters: a row whose delivery failed max_attempts times (the worker's
-- OUTBOX_MAX_ATTEMPTS) gets dead_at and is no longer claimed; it is kept for an operator,
-- who lists it and puts it back in the queue (outbox.list_requests, outbox.retry_requests:
-- `python -m app outbox list|retry`). A worker may also say that an answer is not final
-- although its status would be (a 401 or 403 of our own API is a configuration error,
-- never a delivery): {"retry": true} in its result.
-- Reworked after v1.0.0: a partner's webhook delivery is sent only to an endpoint its
-- channel has now for the delivery's event type. claim_batch ends a claimed row to a removed
-- endpoint (dead, last_error ENDPOINT_REMOVED, audited as webhooks.endpoint_removed) instead of
-- leasing it; admin.set_channel_webhooks ends the pending rows to an endpoint it removes through
-- the same _end_removed_endpoints. Restated whole (CREATE OR REPLACE: it runs over the released
-- functions).
-- Reworked after v1.1.0 (issue 43): _end_removed_endpoints finds the rows to end first, reading
-- each channel's endpoints once per (channel, event type) where it parsed them once per row, with
-- a plan kept for the session where every call planned an UPDATE again; the UPDATE then touches
-- only the rows it ends (usually none). claim_batch calls it for every batch holding webhooks.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- http_post_all: durable outbound calls, many in one statement (an emission batch's delayed
-- /retry and chat notices); returns their ids in order. A row is not delivered before its
-- deliver_after (NULL or past: now). Notifies channel 'outbox' once per distinct payload: the
-- epoch of a delayed row's deliver_after, '' for a row due now (PostgreSQL collapses identical
-- notices of one transaction anyway).
CREATE OR REPLACE FUNCTION outbox.http_post_all(_urls text[], _bodies jsonb[], _headers jsonb[],
                                     _deliver_after timestamptz[]) RETURNS bigint[]
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _ids bigint[];
BEGIN
  WITH ins AS (
    INSERT INTO outbox.http_requests (url, body, headers, deliver_after)
    SELECT x.url, x.body, coalesce(x.headers, '{}'), greatest(coalesce(x.at, pg_catalog.now()), pg_catalog.now())
      FROM unnest(_urls, _bodies, _headers, _deliver_after) WITH ORDINALITY AS x(url, body, headers, at, n)
     ORDER BY x.n
    RETURNING id
  )
  SELECT pg_catalog.array_agg(ins.id ORDER BY ins.id) INTO _ids FROM ins;
  PERFORM pg_catalog.pg_notify('outbox', w.payload)
     FROM (SELECT CASE WHEN coalesce(x.at, pg_catalog.now()) <= pg_catalog.now() THEN ''
                       ELSE pg_catalog.floor(extract(epoch FROM x.at))::text END AS payload
             FROM pg_catalog.unnest(_deliver_after) WITH ORDINALITY AS x(at, n)
            GROUP BY 1 ORDER BY min(x.n)) w;
  RETURN _ids;
END
$$;
REVOKE ALL ON FUNCTION outbox.http_post_all(text[], jsonb[], jsonb[], timestamptz[]) FROM PUBLIC;
COMMENT ON FUNCTION outbox.http_post_all(text[], jsonb[], jsonb[], timestamptz[]) IS
  'Takes parallel arrays of urls, bodies, headers and deliver_after; queues one durable POST each in one '
  'statement, returns their ids in order and NOTIFYs outbox once per distinct due time. Service role '
  '(the emission state machine) and outbox.http_post.';
GRANT EXECUTE ON FUNCTION outbox.http_post_all(text[], jsonb[], jsonb[], timestamptz[]) TO insurance_service;

-- http_post: one durable outbound call (http_post_all of one); returns its id. pg_net's shape.
CREATE OR REPLACE FUNCTION outbox.http_post(url text, body jsonb DEFAULT '{}', headers jsonb DEFAULT '{}',
                                 deliver_after timestamptz DEFAULT now()) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  RETURN (outbox.http_post_all(ARRAY[url], ARRAY[body], ARRAY[headers], ARRAY[deliver_after]))[1];
END
$$;
REVOKE ALL ON FUNCTION outbox.http_post(text, jsonb, jsonb, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION outbox.http_post(text, jsonb, jsonb, timestamptz) IS
  'Queues one durable POST of body to url (an absolute URL or an API path) with headers, not before deliver_after; '
  'returns its id and NOTIFYs outbox (outbox.http_post_all of one). pg_net''s shape. Service role and SECURITY '
  'DEFINER triggers.';
GRANT EXECUTE ON FUNCTION outbox.http_post(text, jsonb, jsonb, timestamptz) TO insurance_service;

-- _end_removed_endpoints(actor, channel, ids): the pending partner webhook deliveries among `ids`
-- (ids NULL: every pending one of `channel`) whose endpoint their channel no longer has for their
-- event type (removed, unsubscribed from the type, or the channel gone), ended: dead now with
-- last_error ENDPOINT_REMOVED and no lease (a worker's late result no longer lands on them); one
-- audit row webhooks.endpoint_removed by `actor` (targets: their ids; details: the channels, the
-- urls and the reason) when there are any. Returns their ids. Owner-run: the worker's role does
-- not read the channels (a row holds its key hash).
CREATE OR REPLACE FUNCTION outbox._end_removed_endpoints(_actor text, _channel uuid, _ids bigint[]) RETURNS bigint[]
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _gone bigint[];
  _ended bigint[];
  _channels jsonb;
  _urls jsonb;
BEGIN
  -- The pending webhook rows asked about (by id, or every one of the channel: two branches, each
  -- by its index, so that one generic plan serves both), then each (channel, event type)'s
  -- current endpoints read once.
  WITH pending AS MATERIALIZED (
    SELECT r.id, r.channel_id, r.body ->> 'type' AS type, r.url
      FROM outbox.http_requests r
     WHERE r.id = ANY (_ids) AND r.channel_id IS NOT NULL AND r.delivered_at IS NULL AND r.dead_at IS NULL
    UNION ALL
    SELECT r.id, r.channel_id, r.body ->> 'type', r.url
      FROM outbox.http_requests r
     WHERE _ids IS NULL AND r.channel_id = _channel AND r.delivered_at IS NULL AND r.dead_at IS NULL
  ), current AS (
    SELECT k.channel_id, k.type, e.url
      FROM (SELECT DISTINCT p.channel_id, p.type FROM pending p) k
      JOIN insurance.channels c ON c.id = k.channel_id
     CROSS JOIN LATERAL webhooks._endpoints(c.integration_payload, k.type) AS e(url)
  )
  SELECT pg_catalog.array_agg(p.id) INTO _gone
    FROM pending p
   WHERE NOT EXISTS (SELECT FROM current w
                      WHERE w.channel_id = p.channel_id AND w.type IS NOT DISTINCT FROM p.type AND w.url = p.url);
  IF _gone IS NULL THEN
    RETURN '{}';
  END IF;
  WITH ended AS (
    UPDATE outbox.http_requests r
       SET dead_at = pg_catalog.now(), lease_until = NULL, leased_by = NULL,
           last_error = 'ENDPOINT_REMOVED: the channel no longer has this endpoint for this event type'
     WHERE r.id = ANY (_gone) AND r.delivered_at IS NULL AND r.dead_at IS NULL
    RETURNING r.id, r.channel_id, r.url)
  SELECT pg_catalog.array_agg(e.id ORDER BY e.id), pg_catalog.jsonb_agg(DISTINCT e.channel_id),
         pg_catalog.jsonb_agg(DISTINCT e.url)
    INTO _ended, _channels, _urls
    FROM ended e;
  IF _ended IS NOT NULL THEN
    PERFORM insurance.record_audit(_actor, 'webhooks.endpoint_removed', pg_catalog.to_jsonb(_ended), 'ok',
              pg_catalog.jsonb_build_object('channels', _channels, 'urls', _urls, 'reason',
                                            'the channel no longer has this endpoint for this event type'));
  END IF;
  RETURN coalesce(_ended, '{}');
END
$$;
COMMENT ON FUNCTION outbox._end_removed_endpoints(text, uuid, bigint[]) IS
  'Takes an actor, a channel and outbox ids (NULL: every pending row of the channel); ends the pending partner '
  'webhook deliveries among them whose endpoint their channel no longer has for their event type (dead, last_error '
  'ENDPOINT_REMOVED, lease dropped), audited as webhooks.endpoint_removed; returns their ids. claim_batch and '
  'admin.set_channel_webhooks.';
REVOKE ALL ON FUNCTION outbox._end_removed_endpoints(text, uuid, bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox._end_removed_endpoints(text, uuid, bigint[]) TO insurance_service;

-- claim_batch: lease up to `_size` due rows to `_worker`; a row whose lease expired (its worker
-- died) is due again, a dead row never is. A partner's webhook row whose endpoint the channel no
-- longer has for its event type is ended instead (outbox._end_removed_endpoints, audited by
-- worker:<name>): every send, retries included, goes only to a current endpoint. Returns
-- {"requests": [{id, method, url, headers, body, attempts}], "nextDueAt": epoch seconds of the
-- next delayed row or null}.
-- Index-bound however long the queue: a plpgsql body planned for each
-- call (force_custom_plan), so that the planner sees `LIMIT 25` where a SQL function's
-- `LIMIT _size` was planned as 10% of the table and its `UPDATE ... FROM due` hash-joined a
-- sequential scan of every pending row; the rows are picked first and updated by key.
CREATE OR REPLACE FUNCTION outbox.claim_batch(_worker text, _size integer, _lease_seconds integer) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' SET plan_cache_mode = force_custom_plan AS $$
DECLARE
  _ids bigint[];
  _webhook_ids bigint[];
  _claimed jsonb;
BEGIN
  PERFORM insurance.require_role('insurance_service');
  SELECT coalesce(pg_catalog.array_agg(d.id), '{}'), pg_catalog.array_agg(d.id) FILTER (WHERE d.channel_id IS NOT NULL)
    INTO _ids, _webhook_ids
    FROM (SELECT r.id, r.channel_id FROM outbox.http_requests r
           WHERE r.delivered_at IS NULL AND r.dead_at IS NULL AND r.deliver_after <= pg_catalog.now()
             AND (r.lease_until IS NULL OR r.lease_until < pg_catalog.now())
           ORDER BY r.deliver_after
           LIMIT _size
           FOR UPDATE SKIP LOCKED) d;
  IF _webhook_ids IS NOT NULL THEN
    _ids := ARRAY(SELECT pg_catalog.unnest(_ids)
                  EXCEPT SELECT pg_catalog.unnest(outbox._end_removed_endpoints('worker:' || _worker, NULL, _webhook_ids)));
  END IF;
  WITH leased AS (
    UPDATE outbox.http_requests r
       SET lease_until = pg_catalog.now() + pg_catalog.make_interval(secs => _lease_seconds),
           leased_by = _worker, attempts = r.attempts + 1
     WHERE r.id = ANY (_ids)
    RETURNING r.id, r.method, r.url, r.headers, r.body, r.attempts
  )
  SELECT pg_catalog.jsonb_build_object(
    'requests', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.to_jsonb(l) ORDER BY l.id) FROM leased l), '[]'),
    'nextDueAt', (SELECT extract(epoch FROM r.deliver_after) FROM outbox.http_requests r
                   WHERE r.delivered_at IS NULL AND r.dead_at IS NULL AND r.deliver_after > pg_catalog.now()
                   ORDER BY r.deliver_after LIMIT 1))
    INTO _claimed;
  RETURN _claimed;
END
$$;
COMMENT ON FUNCTION outbox.claim_batch(text, integer, integer) IS
  'Leases up to _size due rows to _worker for _lease_seconds (attempts + 1), reading only those rows; a partner '
  'webhook row to an endpoint its channel no longer has is ended instead (outbox._end_removed_endpoints); returns '
  '{requests: [{id, method, url, headers, body, attempts}], nextDueAt}. The worker (service role).';
GRANT EXECUTE ON FUNCTION outbox.claim_batch(text, integer, integer) TO insurance_service, insurance_app;

-- is_final(status): a delivery answered with this status needs no retry (null: no answer came).
CREATE OR REPLACE FUNCTION outbox.is_final(_status integer) RETURNS boolean
LANGUAGE sql IMMUTABLE
BEGIN ATOMIC
  SELECT _status IS NOT NULL AND _status NOT IN (408, 409, 425, 429) AND _status < 500;
END;
COMMENT ON FUNCTION outbox.is_final(integer) IS
  'True when a delivery answered with this HTTP status needs no retry (NULL: no answer came). Inlined; service role.';
GRANT EXECUTE ON FUNCTION outbox.is_final(integer) TO insurance_service;

-- record_deliveries: the worker's results [{id, status, error, retry, retryIn, defer}]: a final answer delivers the
-- row; any other backs it off (retryIn seconds when the worker gives them, as it does for partner webhooks;
-- else 2^attempts s, at most an hour), or makes it dead after max_attempts. `defer` (seconds) is no
-- attempt: the row comes back that much later, its attempt uncounted (a webhook endpoint busy in this worker).
CREATE OR REPLACE FUNCTION outbox.record_deliveries(_worker text, _results jsonb, _max_attempts integer DEFAULT 20)
RETURNS integer
LANGUAGE sql SET search_path = '' AS $$
  SELECT insurance.require_role('insurance_service');
  WITH res AS (
    SELECT (x ->> 'id')::bigint AS id, (x ->> 'status')::integer AS status, x ->> 'error' AS error,
           outbox.is_final((x ->> 'status')::integer) AND NOT coalesce((x ->> 'retry')::boolean, false) AS final,
           CASE WHEN x ? 'retryIn' THEN least(greatest((x ->> 'retryIn')::double precision, 0), 86400) END AS retry_in,
           CASE WHEN x ? 'defer' THEN least(greatest((x ->> 'defer')::double precision, 0), 3600) END AS defer
      FROM pg_catalog.jsonb_array_elements(_results) AS x
  ), upd AS (
    UPDATE outbox.http_requests r
       SET last_status = CASE WHEN res.defer IS NULL THEN res.status ELSE r.last_status END,
           last_error = CASE WHEN res.defer IS NULL THEN pg_catalog.left(res.error, 500) ELSE r.last_error END,
           lease_until = NULL, leased_by = NULL,
           attempts = CASE WHEN res.defer IS NULL THEN r.attempts ELSE greatest(r.attempts - 1, 0) END,
           delivered_at = CASE WHEN res.defer IS NULL AND res.final THEN pg_catalog.now() END,
           dead_at = CASE WHEN res.defer IS NULL AND NOT res.final AND r.attempts >= _max_attempts
                          THEN pg_catalog.now() END,
           deliver_after = CASE WHEN res.defer IS NOT NULL
                                THEN pg_catalog.now() + pg_catalog.make_interval(secs => res.defer)
                                WHEN res.final OR r.attempts >= _max_attempts THEN r.deliver_after
                                ELSE pg_catalog.now() + pg_catalog.make_interval(secs => coalesce(res.retry_in,
                                       least(3600, power(2, least(r.attempts, 12))))) END
      FROM res
     WHERE r.id = res.id AND r.leased_by = _worker AND r.delivered_at IS NULL
    RETURNING r.delivered_at
  )
  SELECT count(*) FILTER (WHERE delivered_at IS NOT NULL)::integer FROM upd
$$;
COMMENT ON FUNCTION outbox.record_deliveries(text, jsonb, integer) IS
  'Records the worker''s results [{id, status, error, retry, retryIn, defer}] on rows it leases: delivered, backed off '
  '(retryIn seconds, else 2^attempts), dead after max_attempts, or deferred uncounted; returns how many were delivered. '
  'The worker (service role).';
GRANT EXECUTE ON FUNCTION outbox.record_deliveries(text, jsonb, integer) TO insurance_service, insurance_app;

-- release: give rows leased by `worker` back to the queue at once (a clean shutdown).
CREATE OR REPLACE FUNCTION outbox.release(_worker text, _ids bigint[]) RETURNS integer
LANGUAGE sql SET search_path = '' AS $$
  SELECT insurance.require_role('insurance_service');
  WITH upd AS (
    UPDATE outbox.http_requests r SET lease_until = NULL, leased_by = NULL,
                                      attempts = greatest(r.attempts - 1, 0)
     WHERE r.id = ANY (_ids) AND r.leased_by = _worker AND r.delivered_at IS NULL
    RETURNING 1)
  SELECT count(*)::integer FROM upd
$$;
COMMENT ON FUNCTION outbox.release(text, bigint[]) IS
  'Gives rows ids leased by worker back to the queue at once, their attempt uncounted; returns how many. The worker on shutdown.';
GRANT EXECUTE ON FUNCTION outbox.release(text, bigint[]) TO insurance_service, insurance_app;

-- list_requests: the operator's view of the queue, newest first: dead rows only, or every
-- row not yet delivered (dead ones included). The command line's `outbox list`.
CREATE OR REPLACE FUNCTION outbox.list_requests(_dead boolean DEFAULT false, _limit integer DEFAULT 100) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'id', r.id, 'method', r.method, 'url', r.url, 'body', r.body, 'attempts', r.attempts,
           'deliverAfter', r.deliver_after, 'deadAt', r.dead_at, 'leasedBy', r.leased_by,
           'lastStatus', r.last_status, 'lastError', r.last_error, 'createdAt', r.created_at,
           'channelId', r.channel_id)
           ORDER BY r.id DESC), '[]')
    FROM (SELECT * FROM outbox.http_requests r
           WHERE r.delivered_at IS NULL AND (NOT _dead OR r.dead_at IS NOT NULL)
           ORDER BY r.id DESC
           LIMIT greatest(least(coalesce(_limit, 100), 10000), 1)) r
$$;
COMMENT ON FUNCTION outbox.list_requests(boolean, integer) IS
  'Undelivered rows (only dead ones with _dead), newest first, at most _limit (1..10000, default 100), as JSON. Operators.';
REVOKE ALL ON FUNCTION outbox.list_requests(boolean, integer) FROM PUBLIC;

-- retry_requests: put rows back in the queue, due now with their attempts counted from zero
-- (every dead row with _all_dead). Audited as outbox.retry by `_actor`, the ids as targets
-- and each row's outcome in details; the result is ok, or OUTBOX_ROW_NOT_FOUND when an id
-- names no row (the command line then exits 1). Returns [{id, result}] in id order, result
-- one of queued (was dead or waiting), delivered (already done: left alone), not_found.
CREATE OR REPLACE FUNCTION outbox.retry_requests(_actor text, _ids bigint[], _all_dead boolean DEFAULT false)
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
  PERFORM insurance.record_audit(_actor, 'outbox.retry',
            coalesce((SELECT pg_catalog.jsonb_agg(o -> 'id') FROM pg_catalog.jsonb_array_elements(_out) AS o), '[]'),
            CASE WHEN _out @> '[{"result": "not_found"}]' THEN 'OUTBOX_ROW_NOT_FOUND' ELSE 'ok' END,
            pg_catalog.jsonb_build_object('allDead', _all_dead, 'outcome', _out));
  PERFORM pg_catalog.pg_notify('outbox', '');
  RETURN _out;
END
$$;
COMMENT ON FUNCTION outbox.retry_requests(text, bigint[], boolean) IS
  'Puts rows _ids (and every dead row with _all_dead) back in the queue, due now, attempts from zero; audited as '
  'outbox.retry by _actor (result OUTBOX_ROW_NOT_FOUND when an id names no row); returns [{id, result: queued|delivered|not_found}]. Operators.';
REVOKE ALL ON FUNCTION outbox.retry_requests(text, bigint[], boolean) FROM PUBLIC;

COMMIT;
