-- Deploy insurance:webhooks_events to pg
-- Reworked after v1.0.0: an event's webhook-id is derived from what the event tells
-- (the item's uid, the provider, the event, the attempt, the length of the error history, the
-- outcome, the endpoint) instead of drawn at random, so the same event queued again (the outbox
-- of a database restored to a point in time resends what was delivered after it) reaches the
-- partner under the id it already has, and the partner's dedupe holds. Restated whole;
-- CREATE OR REPLACE, since the released version runs first.
-- Partners hear back (issue 20): a channel's webhook secret (a salt; the secret itself is
-- derived from it with WEBHOOK_SECRET_KEY, which only the processes hold), the events of its
-- items' sales emissions written to the outbox by a trigger in the transaction that records
-- the emission's state, and the partner's and the operator's views of the deliveries.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- _endpoints(payload, type): the urls of an IntegrationPayload's webhooks that take events of
-- `type` (a string entry takes every event; an object its "events", every event without).
CREATE OR REPLACE FUNCTION webhooks._endpoints(_payload jsonb, _type text) RETURNS SETOF text
LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
  SELECT CASE WHEN pg_catalog.jsonb_typeof(w) = 'string' THEN w #>> '{}' ELSE w ->> 'url' END
    FROM pg_catalog.jsonb_array_elements(CASE WHEN pg_catalog.jsonb_typeof(_payload -> 'webhooks') = 'array'
                                              THEN _payload -> 'webhooks' ELSE '[]' END) AS x(w)
   WHERE pg_catalog.jsonb_typeof(w) = 'string'
      OR (pg_catalog.jsonb_typeof(w) = 'object' AND pg_catalog.jsonb_typeof(w -> 'url') = 'string'
          AND (NOT w ? 'events' OR w -> 'events' ? _type))
$$;
COMMENT ON FUNCTION webhooks._endpoints(jsonb, text) IS
  'Takes an IntegrationPayload and an event type; returns the urls of its webhooks subscribed to that type. Private helper of _emission_event.';
REVOKE ALL ON FUNCTION webhooks._endpoints(jsonb, text) FROM PUBLIC;

-- _emission_event(): AFTER INSERT and AFTER UPDATE statement trigger of
-- insurance.integration_emissions, for the sales dispatch: for every row whose outcome was
-- recorded (inserted with attempts > 0, or attempts grew), the event emission.succeeded,
-- emission.failed or emission.abandoned goes to every endpoint of the item's channel that
-- takes it, one outbox row each with its webhook-id, in the statement's row order and the
-- endpoints' order; one NOTIFY when any was queued. Same transaction as the state: the event
-- exists if and only if the state was recorded. A statement trigger: a batch of outcomes
-- (integrations.record_batch) queues all its events with one INSERT, and reads each channel
-- of the batch (active, a secret, its endpoints for each event type it receives) once, not
-- once per emission. Nested loops only, planned once per session: driven by the recorded
-- rows, every lookup is an index probe. The webhook-id is a digest of what the event tells and
-- where it goes: an event queued twice (after a point-in-time restore) keeps its id, and two
-- different events (another attempt, another outcome, another item) never share one.
CREATE OR REPLACE FUNCTION webhooks._emission_event() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  _ids bigint[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    _ids := ARRAY(SELECT n.id FROM new_rows n WHERE n.event = 'SALES_DISPATCH' AND n.attempts > 0);
  ELSE
    _ids := ARRAY(SELECT n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
                   WHERE n.event = 'SALES_DISPATCH' AND n.attempts > o.attempts);
  END IF;
  IF pg_catalog.cardinality(_ids) = 0 THEN
    RETURN NULL;
  END IF;
  INSERT INTO outbox.http_requests (url, body, headers, channel_id)
  WITH recorded AS MATERIALIZED (
    SELECT x.n, e.id, e.risk_item_id, r.uid, r.policy_uid, r.channel_id, e.provider, e.event, e.status,
           e.external_id, e.attempts, e.next_retry_at, e.error_history,
           pg_catalog.jsonb_array_length(coalesce(e.error_history, '[]')) AS history,
           CASE e.status WHEN 'SUCCESS' THEN 'emission.succeeded' WHEN 'FAILED' THEN 'emission.failed'
                         ELSE 'emission.abandoned' END AS type
      FROM pg_catalog.unnest(_ids) WITH ORDINALITY AS x(id, n)
      JOIN insurance.integration_emissions e ON e.id = x.id
      JOIN insurance.risk_items r ON r.id = e.risk_item_id
     WHERE r.channel_id IS NOT NULL),
  -- Each (channel, event type) of the statement once: an active channel with a secret, and the
  -- endpoints that take the type, in the channel's order.
  endpoints AS MATERIALIZED (
    SELECT k.channel_id, k.type, w.url, w.first
      FROM (SELECT DISTINCT d.channel_id, d.type FROM recorded d) k
      JOIN insurance.channels c ON c.id = k.channel_id AND c.active
     CROSS JOIN LATERAL (SELECT u.url, min(u.n) AS first
                           FROM webhooks._endpoints(c.integration_payload, k.type) WITH ORDINALITY AS u(url, n)
                          WHERE u.url ~ '^https?://' GROUP BY u.url) w
     WHERE EXISTS (SELECT FROM webhooks.secrets s WHERE s.channel_id = c.id))
  SELECT w.url, v.body,
         pg_catalog.jsonb_build_object(
           'webhook-id', 'msg_' || pg_catalog.left(pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(
             pg_catalog.concat_ws(':', d.uid, d.provider, d.event, d.attempts, d.history, d.type, w.url), 'UTF8')),
             'hex'), 32),
           'X-Outbox-Webhook', d.channel_id),
         d.channel_id
    FROM recorded d
    JOIN endpoints w ON w.channel_id = d.channel_id AND w.type = d.type
   CROSS JOIN LATERAL (SELECT pg_catalog.jsonb_build_object(
                         'type', d.type, 'timestamp', pg_catalog.now(),
                         'data', pg_catalog.jsonb_build_object(
                           'emissionId', d.id, 'riskItemId', d.risk_item_id, 'riskItemUid', d.uid,
                           'policyUid', d.policy_uid, 'provider', d.provider, 'event', d.event, 'status', d.status,
                           'externalId', d.external_id, 'attempts', d.attempts, 'nextRetryAt', d.next_retry_at,
                           -- What holders see in metadata.integration: a code and a generic message.
                           'error', CASE WHEN d.status <> 'SUCCESS' THEN pg_catalog.jsonb_build_object(
                                      'code', coalesce(d.error_history -> -1 ->> 'code', 'UNKNOWN'),
                                      'message', CASE WHEN d.status = 'FAILED'
                                                      THEN 'The insurer could not take the policy yet; it will be retried.'
                                                      ELSE 'The insurer did not take the policy.' END) END)) AS body) v
   ORDER BY d.n, w.first;
  IF FOUND THEN
    PERFORM pg_catalog.pg_notify('outbox', '');
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION webhooks._emission_event() IS
  'Statement trigger of integration_emissions (sales dispatch, an outcome recorded): queues the emission.* event of each such row for each endpoint of the item''s channel that takes it. Returns NULL (AFTER trigger).';
REVOKE ALL ON FUNCTION webhooks._emission_event() FROM PUBLIC;

-- An outcome recorded: a first one (INSERT) or one more attempt (a dashboard retry that
-- resets attempts to 0 records nothing, and sends nothing). Transition tables cannot go with
-- a column list (UPDATE OF attempts): the function compares the attempts itself.
-- SHARE ROW EXCLUSIVE on integration_emissions: restated as released (the trigger is unchanged), a catalog change held for a moment
CREATE OR REPLACE TRIGGER integration_emissions_webhook_insert AFTER INSERT ON insurance.integration_emissions
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION webhooks._emission_event();
-- SHARE ROW EXCLUSIVE on integration_emissions: restated as released (the trigger is unchanged), a catalog change held for a moment
CREATE OR REPLACE TRIGGER integration_emissions_webhook_update AFTER UPDATE ON insurance.integration_emissions
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION webhooks._emission_event();

-- signing_salts(channel, overlap_seconds): {"salts": [hex]}: the channel's current salt, then the
-- previous one while its rotation is younger than overlap_seconds; [] without a secret or for
-- a revoked channel. The worker derives the secrets from them.
CREATE OR REPLACE FUNCTION webhooks.signing_salts(_channel uuid, _overlap_seconds integer) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _s webhooks.secrets;
BEGIN
  PERFORM insurance.require_role('insurance_service');
  SELECT s.* INTO _s FROM webhooks.secrets s JOIN insurance.channels c ON c.id = s.channel_id
   WHERE s.channel_id = _channel AND c.active;
  IF NOT FOUND THEN
    RETURN '{"salts": []}';
  END IF;
  RETURN pg_catalog.jsonb_build_object('salts',
    CASE WHEN _s.previous_salt IS NOT NULL
              AND _s.rotated_at > pg_catalog.now() - pg_catalog.make_interval(secs => greatest(_overlap_seconds, 0))
         THEN pg_catalog.jsonb_build_array(pg_catalog.encode(_s.salt, 'hex'), pg_catalog.encode(_s.previous_salt, 'hex'))
         ELSE pg_catalog.jsonb_build_array(pg_catalog.encode(_s.salt, 'hex')) END);
END
$$;
COMMENT ON FUNCTION webhooks.signing_salts(uuid, integer) IS
  'Takes a channel id and WEBHOOK_SECRET_OVERLAP in seconds; returns {"salts": [hex, ...]}, newest first ([] without a secret or when revoked). Service role (the worker) only.';
REVOKE ALL ON FUNCTION webhooks.signing_salts(uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION webhooks.signing_salts(uuid, integer) TO insurance_service, insurance_app;

-- _delivery_json(row): the partner's view of one delivery.
CREATE OR REPLACE FUNCTION webhooks._delivery_json(_r outbox.http_requests) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT pg_catalog.jsonb_build_object(
    'id', _r.id, 'eventId', _r.headers ->> 'webhook-id', 'type', _r.body ->> 'type', 'url', _r.url,
    'riskItemUid', _r.body #>> '{data,riskItemUid}', 'policyUid', _r.body #>> '{data,policyUid}',
    'status', CASE WHEN _r.delivered_at IS NOT NULL THEN 'delivered'
                   WHEN _r.dead_at IS NOT NULL THEN 'dead'
                   WHEN _r.last_status IS NOT NULL OR _r.last_error IS NOT NULL THEN 'failing'
                   ELSE 'pending' END,
    'attempts', _r.attempts, 'lastHttpStatus', _r.last_status,
    'nextTryAt', CASE WHEN _r.delivered_at IS NULL AND _r.dead_at IS NULL THEN _r.deliver_after END,
    'deliveredAt', _r.delivered_at, 'createdAt', _r.created_at)
$$;
COMMENT ON FUNCTION webhooks._delivery_json(outbox.http_requests) IS
  'Takes a webhook outbox row; returns the partner''s view of it {id, eventId, type, url, riskItemUid, policyUid, status, attempts, lastHttpStatus, nextTryAt, deliveredAt, createdAt}. Private helper.';
REVOKE ALL ON FUNCTION webhooks._delivery_json(outbox.http_requests) FROM PUBLIC;

COMMIT;
