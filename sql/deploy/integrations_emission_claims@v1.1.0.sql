-- Deploy insurance:integrations_emission_claims to pg
-- The emission claim: at most one provider call per emission key, none after SUCCESS; the set-based begin_batch and its one-key callers
-- Reworked after v1.0.0 (issue 42): no key of a paused provider (insurance.provider_pauses) is
-- claimed, so no attempt is spent while an operator holds it; a first emission of it waits as a
-- FAILED row of 0 attempts, due, which the retry sweep queues once the pause ends. Restated
-- whole (CREATE OR REPLACE).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- emission_json: an emission as the integration endpoints answer it.
CREATE OR REPLACE FUNCTION integrations.emission_json(_e insurance.integration_emissions) RETURNS jsonb
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT jsonb_build_object(
    'emissionId', _e.id, 'riskItemId', _e.risk_item_id, 'provider', _e.provider, 'event', _e.event,
    'status', _e.status, 'externalId', _e.external_id, 'attempts', _e.attempts,
    'nextRetryAt', _e.next_retry_at,
    'error', CASE WHEN _e.status <> 'SUCCESS' THEN _e.error_history -> -1 END);
END;
COMMENT ON FUNCTION integrations.emission_json(insurance.integration_emissions) IS
  'One emission as the integration endpoints answer it (error: the newest error_history entry unless '
  'SUCCESS). Inlined; service and dashboard roles.';
GRANT EXECUTE ON FUNCTION integrations.emission_json(insurance.integration_emissions) TO insurance_service, insurance_dashboard;
-- begin_batch: claim the keys of many emissions, set-based (the outbox worker's batched
-- dispatches; every begin_* entry point is a batch of one). Each spec names a key:
--   {"riskItemId" and/or "riskItemUid", "provider", "event"}   provider NULL means the
--        package's slug for the event (SALES_DISPATCH: sales_integration_slug, POST_SALES:
--        post_sales_integration_slug, POLICY_CREATED: MAIL_PROVIDER)
--   {"orderId"}      the key of the order's event (dispatch-v2, initial mode); its answer
--                    carries "orderId"
--   {"emissionId"}   the key of an existing emission (/retry, dispatch-v2 retry mode)
-- and is answered, in order:
--   {"claimed": true, "idempotencyKey": "<uid>:<provider>:<event>", "item": <StandardRiskItem>, ...}
--                                                      call the provider
--   {"claimed": false, "status": "skipped", ...}        no slug: nothing to call
--   {"claimed": false, "status": "SUCCESS"|"ABANDONED"|"FAILED", ...}  stored outcome
--      (SUCCESS is final, ABANDONED waits for a dashboard retry, FAILED until next_retry_at)
--   {"claimed": false, "status": "IN_PROGRESS", ...}   another caller holds the key
--   {"claimed": false, "status": "PAUSED", "emissionId", "pausedUntil", ...}  the provider is
--      paused: nothing is called and no attempt spent; the emission waits (a first one as a
--      FAILED row of 0 attempts, due) and is sent once the pause ends
--   {"refused": {"status": 404, "code", "message"}}    the spec names nothing (RISK_ITEM_NOT_FOUND,
--      also for an id and a uid that name two different items; ORDER_NOT_FOUND; EMISSION_NOT_FOUND)
-- A key named twice is answered as one call after the other would answer it: the second is
-- IN_PROGRESS when the first claimed it, else the same as the first.
-- Four statements whatever the batch's size: the specs resolved and the keys claimed (in key
-- order, so that two batches never wait on each other in a cycle), then, in a statement of
-- its own, the emissions read, the claims of final or not yet due keys given back and the
-- answers built with the StandardRiskItems of the claimed keys.
-- Planned once per session (force_generic_plan) and with nested loops only: the planner takes a
-- batch for 100 rows (jsonb_array_elements) and, on an emissions table of 20,000 rows, chose
-- hash joins over sequential scans of it (10 ms a call, growing with the table); driven by the
-- specs, every lookup is an index probe.
CREATE OR REPLACE FUNCTION integrations.begin_batch(_specs jsonb, _claimed_by text, _lease_seconds integer DEFAULT 60)
RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  _n bigint[];
  _order bigint[];
  _item bigint[];
  _uid uuid[];
  _slug text[];
  _event text[];
  _code text[];
  _first boolean[];
  _got boolean[];
  _paused timestamptz[];
  _out jsonb;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  WITH spec AS (
    SELECT x.n, x.s, CASE WHEN x.s ? 'orderId' THEN 'order' WHEN x.s ? 'emissionId' THEN 'retry' ELSE 'item' END AS kind
      FROM pg_catalog.jsonb_array_elements(_specs) WITH ORDINALITY AS x(s, n)
  ), named AS (
    SELECT s.n, o.id AS order_id,
           CASE s.kind WHEN 'order' THEN o.risk_item_id WHEN 'retry' THEN e.risk_item_id
                       WHEN 'item' THEN CASE WHEN s.s ->> 'riskItemUid' IS NULL THEN (s.s ->> 'riskItemId')::bigint
                                             ELSE u.id END END AS item,
           CASE s.kind WHEN 'retry' THEN e.provider WHEN 'item' THEN s.s ->> 'provider' END AS provider,
           CASE s.kind WHEN 'order' THEN o.event WHEN 'retry' THEN e.event ELSE s.s ->> 'event' END AS event,
           CASE WHEN s.kind = 'order' AND o.id IS NULL THEN 'ORDER_NOT_FOUND'
                WHEN s.kind = 'retry' AND e.id IS NULL THEN 'EMISSION_NOT_FOUND' END AS code
      FROM spec s
      LEFT JOIN LATERAL (SELECT o.id, o.risk_item_id, o.event FROM insurance.orders o
                          WHERE s.kind = 'order' AND o.id = (s.s ->> 'orderId')::bigint) o ON true
      LEFT JOIN LATERAL (SELECT e.id, e.risk_item_id, e.provider, e.event FROM insurance.integration_emissions e
                          WHERE s.kind = 'retry' AND e.id = (s.s ->> 'emissionId')::bigint) e ON true
      LEFT JOIN LATERAL (SELECT u.id FROM insurance.risk_items u
                          WHERE s.kind = 'item' AND s.s ->> 'riskItemUid' IS NOT NULL
                            AND u.uid = (s.s ->> 'riskItemUid')::uuid
                            AND (s.s ->> 'riskItemId' IS NULL OR u.id = (s.s ->> 'riskItemId')::bigint)) u ON true
  ), resolved AS MATERIALIZED (
    SELECT k.*, pg_catalog.row_number() OVER (PARTITION BY k.item, k.slug, k.event ORDER BY k.n) = 1 AS is_first
      FROM (SELECT d.n, d.order_id, d.item, r.uid, d.event,
                   coalesce(d.code, CASE WHEN r.id IS NULL THEN 'RISK_ITEM_NOT_FOUND' END) AS code,
                   coalesce(d.provider, CASE d.event WHEN 'SALES_DISPATCH' THEN p.sales_integration_slug
                                                     WHEN 'POST_SALES' THEN p.post_sales_integration_slug
                                                     WHEN 'POLICY_CREATED' THEN 'MAIL_PROVIDER' END) AS slug
              FROM named d
              LEFT JOIN insurance.risk_items r ON d.code IS NULL AND r.id = d.item
              LEFT JOIN insurance.packages p ON p.id = r.package_id) k
  ), paused AS MATERIALIZED (
    -- The paused providers among the batch's (a handful of rows; 'infinity' when no end is set).
    SELECT k.n, coalesce(z.until, 'infinity') AS until
      FROM resolved k
      JOIN insurance.provider_pauses z ON z.provider = k.slug AND (z.until IS NULL OR z.until > pg_catalog.now())
     WHERE k.code IS NULL
  ), claimed AS (
    -- Claim first, then read the emission (the next statement, a newer snapshot): a caller that
    -- recorded SUCCESS gave its claim back in the same transaction, so whoever claims after it
    -- sees the SUCCESS.
    INSERT INTO insurance.emission_claims AS c (risk_item_id, provider, event, claimed_by, lease_until)
    SELECT k.item, k.slug, k.event, _claimed_by,
           pg_catalog.clock_timestamp() + pg_catalog.make_interval(secs => _lease_seconds)
      FROM resolved k
     WHERE k.code IS NULL AND k.slug IS NOT NULL AND k.is_first
       AND NOT EXISTS (SELECT FROM paused z WHERE z.n = k.n)
     ORDER BY k.item, k.slug, k.event
    ON CONFLICT ON CONSTRAINT emission_claims_pkey DO UPDATE
       SET claimed_by = excluded.claimed_by, lease_until = excluded.lease_until
     WHERE c.lease_until < pg_catalog.clock_timestamp()
    RETURNING c.risk_item_id, c.provider, c.event
  )
  SELECT pg_catalog.array_agg(k.n ORDER BY k.n), pg_catalog.array_agg(k.order_id ORDER BY k.n),
         pg_catalog.array_agg(k.item ORDER BY k.n), pg_catalog.array_agg(k.uid ORDER BY k.n),
         pg_catalog.array_agg(k.slug ORDER BY k.n), pg_catalog.array_agg(k.event ORDER BY k.n),
         pg_catalog.array_agg(k.code ORDER BY k.n), pg_catalog.array_agg(k.is_first ORDER BY k.n),
         pg_catalog.array_agg(c.risk_item_id IS NOT NULL ORDER BY k.n), pg_catalog.array_agg(z.until ORDER BY k.n)
    INTO _n, _order, _item, _uid, _slug, _event, _code, _first, _got, _paused
    FROM resolved k
    LEFT JOIN claimed c ON k.code IS NULL AND c.risk_item_id = k.item AND c.provider = k.slug AND c.event = k.event
    LEFT JOIN paused z ON z.n = k.n;

  WITH k AS MATERIALIZED (
    SELECT k.*, x.em, coalesce((x.em).status = 'SUCCESS' OR (x.em).status = 'ABANDONED'
                               OR ((x.em).status = 'FAILED' AND (x.em).next_retry_at > pg_catalog.now()), false) AS final
      FROM unnest(_n, _order, _item, _uid, _slug, _event, _code, _first, _got, _paused)
           AS k(n, order_id, item, uid, slug, event, code, is_first, got, paused_until)
      LEFT JOIN LATERAL (SELECT e AS em FROM insurance.integration_emissions e
                          WHERE k.code IS NULL AND e.risk_item_id = k.item AND e.provider = k.slug
                            AND e.event = k.event) x ON true
  ), waiting AS (
    -- A first emission of a paused provider is kept as FAILED, 0 attempts, due now: the sweep
    -- queues it once the pause ends (attempts 0 sends no webhook event: nothing was recorded).
    INSERT INTO insurance.integration_emissions AS e (risk_item_id, provider, event, status, next_retry_at, attempts)
    SELECT k.item, k.slug, k.event, 'FAILED', pg_catalog.now(), 0
      FROM k
     WHERE k.paused_until IS NOT NULL AND k.is_first AND k.em IS NULL
     ORDER BY k.n
    ON CONFLICT ON CONSTRAINT integration_emissions_risk_item_id_provider_event_key DO NOTHING
    RETURNING e.id, e.risk_item_id, e.provider, e.event
  ), given_back AS (
    DELETE FROM insurance.emission_claims c
     USING k
     WHERE k.got AND k.is_first AND k.final
       AND c.risk_item_id = k.item AND c.provider = k.slug AND c.event = k.event
  ), items AS MATERIALIZED (
    -- The callers need the StandardRiskItems next: they come in the same round trip.
    SELECT integrations.standard_risk_items(ARRAY(SELECT k.item FROM k WHERE k.got AND k.is_first AND NOT k.final)) AS m
  )
  SELECT coalesce(pg_catalog.jsonb_agg(
           CASE WHEN k.code IS NOT NULL THEN
                  pg_catalog.jsonb_build_object('refused', pg_catalog.jsonb_build_object(
                    'status', 404, 'code', k.code,
                    'message', CASE k.code WHEN 'ORDER_NOT_FOUND' THEN 'order not found'
                                           WHEN 'EMISSION_NOT_FOUND' THEN 'emission not found'
                                           ELSE 'risk item not found' END))
                ELSE pg_catalog.jsonb_build_object('riskItemId', k.item, 'riskItemUid', k.uid,
                                                   'provider', k.slug, 'event', k.event)
                  || CASE WHEN k.slug IS NULL THEN '{"claimed": false, "status": "skipped", "emissionId": null}'
                          WHEN k.paused_until IS NOT NULL AND k.final THEN integrations.emission_json(k.em) || '{"claimed": false}'
                          WHEN k.paused_until IS NOT NULL THEN pg_catalog.jsonb_build_object(
                                 'claimed', false, 'status', 'PAUSED', 'emissionId', coalesce((k.em).id, w.id),
                                 'attempts', coalesce((k.em).attempts, 0),
                                 'pausedUntil', CASE WHEN k.paused_until < 'infinity' THEN k.paused_until END)
                          WHEN NOT k.got OR (NOT k.is_first AND NOT k.final) THEN
                            '{"claimed": false, "status": "IN_PROGRESS"}'::jsonb
                            || pg_catalog.jsonb_build_object('emissionId', (k.em).id)
                          WHEN k.final THEN integrations.emission_json(k.em) || '{"claimed": false}'
                          ELSE pg_catalog.jsonb_build_object(
                                 'claimed', true, 'emissionId', (k.em).id, 'status', (k.em).status,
                                 'attempts', coalesce((k.em).attempts, 0),
                                 'idempotencyKey', k.uid || ':' || k.slug || ':' || k.event,
                                 'item', i.m -> k.item::text) END
                  || CASE WHEN k.order_id IS NOT NULL THEN pg_catalog.jsonb_build_object('orderId', k.order_id)
                          ELSE '{}' END END
           ORDER BY k.n), '[]')
    INTO _out
    FROM k CROSS JOIN items i
    LEFT JOIN waiting w ON w.risk_item_id = k.item AND w.provider = k.slug AND w.event = k.event;
  RETURN _out;
END
$$;
COMMENT ON FUNCTION integrations.begin_batch(jsonb, text, integer) IS
  'Claims, set-based, the emission key of each spec ({riskItemId and/or riskItemUid, provider, event} | {orderId} | '
  '{emissionId}) with a lease; answers each in order: {claimed: true, idempotencyKey, item} or {claimed: false, '
  'status: skipped|SUCCESS|FAILED|ABANDONED|IN_PROGRESS|PAUSED, ...} (with orderId for an order), a spec that names '
  'nothing {refused: {status: 404, code, message}}; a key named twice answers as two calls in a row; a paused '
  'provider''s key is not claimed (PAUSED, with emissionId and pausedUntil; a first emission stored as FAILED of 0 '
  'attempts). Service role.';
GRANT EXECUTE ON FUNCTION integrations.begin_batch(jsonb, text, integer) TO insurance_service, insurance_app;

-- _begin_one: the answer of a batch of one spec; its refusal raised as PT404 (the contract of
-- postsales.begin_emission, the one single-key entry point).
CREATE OR REPLACE FUNCTION integrations._begin_one(_spec jsonb, _claimed_by text, _lease_seconds integer) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _one jsonb := integrations.begin_batch(pg_catalog.jsonb_build_array(_spec), _claimed_by, _lease_seconds) -> 0;
BEGIN
  IF _one ? 'refused' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = _one #>> '{refused,message}',
                          DETAIL = _one #>> '{refused,code}';
  END IF;
  RETURN _one;
END
$$;
COMMENT ON FUNCTION integrations._begin_one(jsonb, text, integer) IS
  'Takes one begin_batch spec; returns its answer, or raises its refusal as PT404 with the code as DETAIL. '
  'Private helper of postsales.begin_emission (and of tests that claim one key).';
REVOKE ALL ON FUNCTION integrations._begin_one(jsonb, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations._begin_one(jsonb, text, integer) TO insurance_service;

COMMIT;
