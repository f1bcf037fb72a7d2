-- Deploy insurance:gateway_webhook_deliveries to pg
-- Gateway: a partner's webhook deliveries listed, and redelivered only to an endpoint the channel
-- has now (docs/webhooks.md, "Redelivery").
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- squawk-ignore ban-drop-function -- CREATE OR REPLACE keeps a parameter's name: each made anew below, same signature and grants, in this transaction
DROP FUNCTION gateway.list_webhook_deliveries(integer, integer, integer),
  gateway.page_webhook_deliveries(integer, integer, bigint),
  gateway.redeliver_webhook(integer, bigint, integer),
  gateway.redeliver_webhook(integer, bigint);

-- list_webhook_deliveries(rate_limit, from, to): the calling channel's deliveries, newest first,
-- rows from..to (at most 100): {items, from, to}.
CREATE OR REPLACE FUNCTION gateway.list_webhook_deliveries(_rate_limit integer, _from integer, _to integer) RETURNS gateway.reply
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _reply gateway.reply;
  _channel uuid := (SELECT insurance.claim('sub'))::uuid;
BEGIN
  PERFORM insurance.require_role('insurance_channel');
  IF _from IS NULL OR _to IS NULL OR _from < 0 OR _to < _from OR _to - _from >= 100 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'the window needs 0 <= from <= to and at most 100 items',
                          DETAIL = 'INVALID_WINDOW';
  END IF;
  _reply := gateway.admit(_rate_limit);
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  SELECT pg_catalog.jsonb_build_object(
           'items', coalesce(pg_catalog.jsonb_agg(webhooks._delivery_json(r) ORDER BY r.id DESC), '[]'),
           'from', _from, 'to', _to)::text
    INTO _reply.data
    FROM (SELECT * FROM outbox.http_requests o WHERE o.channel_id = _channel
           ORDER BY o.id DESC OFFSET _from LIMIT _to - _from + 1) r;
  RETURN _reply;
END
$$;
COMMENT ON FUNCTION gateway.list_webhook_deliveries(integer, integer, integer) IS
  'Takes the rate limit and a window from..to (at most 100); returns the calling channel''s webhook deliveries newest first as {items, from, to} in a gateway.reply; raises PT400 INVALID_WINDOW. Channel role only.';
REVOKE ALL ON FUNCTION gateway.list_webhook_deliveries(integer, integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.list_webhook_deliveries(integer, integer, integer) TO insurance_channel, insurance_app;

-- page_webhook_deliveries(rate_limit, page_size, before): keyset pages, newest first: deliveries
-- older than `before` (NULL: from the newest), {items, nextCursor} (the last id as 8 bytes in
-- unpadded base64url, NULL on the last page), as gateway.page_risk_items.
CREATE OR REPLACE FUNCTION gateway.page_webhook_deliveries(_rate_limit integer, _page_size integer, _before bigint) RETURNS gateway.reply
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _reply gateway.reply;
  _channel uuid := (SELECT insurance.claim('sub'))::uuid;
  _items jsonb;
  _more boolean;
  _last bigint;
BEGIN
  PERFORM insurance.require_role('insurance_channel');
  IF _page_size IS NULL OR _page_size NOT BETWEEN 1 AND 100 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'limit must be from 1 to 100', DETAIL = 'INVALID_PAGINATION';
  END IF;
  _reply := gateway.admit(_rate_limit);
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  WITH page AS (
    SELECT o AS d, o.id, pg_catalog.row_number() OVER (ORDER BY o.id DESC) AS n
      FROM outbox.http_requests o
     WHERE o.channel_id = _channel AND (_before IS NULL OR o.id < _before)
     ORDER BY o.id DESC LIMIT _page_size + 1)
  SELECT coalesce(pg_catalog.jsonb_agg(webhooks._delivery_json(p.d) ORDER BY p.id DESC) FILTER (WHERE p.n <= _page_size), '[]'),
         count(*) > _page_size, min(p.id) FILTER (WHERE p.n <= _page_size)
    INTO _items, _more, _last
    FROM page p;
  _reply.data := pg_catalog.jsonb_build_object(
    'items', _items,
    'nextCursor', CASE WHEN _more THEN pg_catalog.rtrim(pg_catalog.translate(pg_catalog.encode(
                                         pg_catalog.int8send(_last), 'base64'), '+/', '-_'), '=') END)::text;
  RETURN _reply;
END
$$;
COMMENT ON FUNCTION gateway.page_webhook_deliveries(integer, integer, bigint) IS
  'Takes the rate limit, a page size (1-100) and the id to start before (NULL: newest); returns the calling channel''s webhook deliveries newest first as {items, nextCursor} in a gateway.reply; raises PT400 INVALID_PAGINATION. Channel role only.';
REVOKE ALL ON FUNCTION gateway.page_webhook_deliveries(integer, integer, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.page_webhook_deliveries(integer, integer, bigint) TO insurance_channel, insurance_app;

-- redeliver_webhook(rate_limit, id, per_minute): the calling channel's delivery `id` queued again as
-- a new delivery (same url, body and webhook-id), due now; the new delivery's view. At most
-- `per_minute` redeliveries a channel in a calendar minute (WEBHOOK_REDELIVERIES_PER_MINUTE,
-- counted in webhooks.redelivery_counts for every app process): beyond it the reply is refused
-- with this limit in its rate fields (the app answers 429 with Retry-After and X-RateLimit-*)
-- and nothing is queued. Each redelivery is audited as webhooks.redeliver by channel:<id>.
-- (Before, 300 redeliveries of one event in 1.8 s were all queued, unaudited.)
-- A delivery whose endpoint the channel no longer has for its event type is refused (PT409
-- WEBHOOK_ENDPOINT_REMOVED): a removed endpoint never receives events again.
CREATE OR REPLACE FUNCTION gateway.redeliver_webhook(_rate_limit integer, _id bigint, _per_minute integer) RETURNS gateway.reply
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _reply gateway.reply;
  _channel uuid := (SELECT insurance.claim('sub'))::uuid;
  _window timestamptz := pg_catalog.date_trunc('minute', pg_catalog.now());
  _hits integer;
  _new outbox.http_requests;
BEGIN
  PERFORM insurance.require_role('insurance_channel');
  _reply := gateway.admit(_rate_limit);
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  IF NOT EXISTS (SELECT FROM outbox.http_requests o WHERE o.id = _id AND o.channel_id = _channel) THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'webhook delivery not found', DETAIL = 'WEBHOOK_DELIVERY_NOT_FOUND';
  END IF;
  -- Only to an endpoint the channel has now for this event type (the operator may have removed
  -- it): refused before the redelivery is counted, nothing queued.
  IF NOT EXISTS (SELECT FROM outbox.http_requests o
                   JOIN insurance.channels c ON c.id = o.channel_id
                  WHERE o.id = _id
                    AND o.url IN (SELECT e.url FROM webhooks._endpoints(c.integration_payload, o.body ->> 'type') AS e(url))) THEN
    RAISE EXCEPTION USING ERRCODE = 'PT409',
      MESSAGE = 'this delivery''s endpoint is no longer one of the channel''s endpoints for its event type',
      DETAIL = 'WEBHOOK_ENDPOINT_REMOVED';
  END IF;
  INSERT INTO webhooks.redelivery_counts AS r (channel_id, window_start, hits)
  VALUES (_channel, _window, 1)
  ON CONFLICT (channel_id) DO UPDATE
    SET hits = CASE WHEN r.window_start = excluded.window_start THEN r.hits + 1 ELSE 1 END,
        window_start = excluded.window_start
  RETURNING r.hits INTO _hits;
  IF _hits > greatest(_per_minute, 0) THEN
    _reply.rate_limit := greatest(_per_minute, 0);
    _reply.rate_remaining := -1;
    _reply.rate_reset := extract(epoch FROM _window + interval '1 minute')::bigint;
    RETURN _reply;
  END IF;
  INSERT INTO outbox.http_requests (url, body, headers, channel_id)
  SELECT o.url, o.body, o.headers, o.channel_id FROM outbox.http_requests o
   WHERE o.id = _id AND o.channel_id = _channel
  RETURNING * INTO _new;
  PERFORM insurance.record_audit('channel:' || _channel, 'webhooks.redeliver',
            pg_catalog.jsonb_build_array(_channel, _id, _new.id), 'ok',
            pg_catalog.jsonb_build_object('delivery', _id, 'redelivery', _new.id,
                                          'eventId', _new.headers ->> 'webhook-id'));
  PERFORM pg_catalog.pg_notify('outbox', '');
  _reply.data := webhooks._delivery_json(_new)::text;
  RETURN _reply;
END
$$;
COMMENT ON FUNCTION gateway.redeliver_webhook(integer, bigint, integer) IS
  'Takes the rate limit, a delivery id and the redeliveries allowed a channel a minute; queues the calling channel''s delivery again (same event and webhook-id), audited as webhooks.redeliver, and returns the new delivery in a gateway.reply, or a refused reply (rate fields of this limit) beyond _per_minute; raises PT404 WEBHOOK_DELIVERY_NOT_FOUND (also another channel''s) and PT409 WEBHOOK_ENDPOINT_REMOVED (the channel no longer has the delivery''s endpoint for its event type: nothing queued). Channel role only.';
REVOKE ALL ON FUNCTION gateway.redeliver_webhook(integer, bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.redeliver_webhook(integer, bigint, integer) TO insurance_channel, insurance_app;

-- redeliver_webhook(rate_limit, id): v0.9.0's signature, for an app of that release still serving
-- during an upgrade: the same, at the default WEBHOOK_REDELIVERIES_PER_MINUTE (10).
CREATE OR REPLACE FUNCTION gateway.redeliver_webhook(_rate_limit integer, _id bigint) RETURNS gateway.reply
LANGUAGE sql SECURITY INVOKER SET search_path = '' AS $$
  SELECT gateway.redeliver_webhook(_rate_limit, _id, 10)
$$;
COMMENT ON FUNCTION gateway.redeliver_webhook(integer, bigint) IS
  'Takes the rate limit and a delivery id; gateway.redeliver_webhook(_rate_limit, _id, 10), for the app of v0.9.0 during an upgrade. Channel role only.';
REVOKE ALL ON FUNCTION gateway.redeliver_webhook(integer, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.redeliver_webhook(integer, bigint) TO insurance_channel, insurance_app;

COMMIT;
