-- The set-based emission path (issue 23, item 2): integrations.begin_batch and
-- integrations.record_batch answer and store exactly what the same calls one after the other
-- would (each batch is run, its answers and state kept in psql variables, rolled back to a
-- savepoint, then replayed one call at a time and compared), a key named twice in one batch
-- included; a batch with an outcome that cannot be stored falls back to the per-item path; and
-- a batch of 25 runs the state machine once, not once per emission.
BEGIN;
\ir helpers/common.psql
SELECT plan(15);

INSERT INTO insurance.packages (uid, name, sales_integration_slug) VALUES ('pgtap-62b', 'P', 'PROVIDER_A'),
                                                                          ('pgtap-62b-none', 'N', NULL);
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid LIKE 'pgtap-62b%';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
  SELECT id, 'b62-' || n, 'travel' FROM insurance.packages, generate_series(1, 30) n WHERE uid = 'pgtap-62b';
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
  SELECT id, 'b62-none', 'travel' FROM insurance.packages WHERE uid = 'pgtap-62b-none';
INSERT INTO insurance.authorized_claimants (risk_item_id, email)
  SELECT id, 'holder62b@example.com' FROM insurance.risk_items WHERE policy_uid = 'b62-1';
INSERT INTO insurance.orders (risk_item_id, event)
  SELECT id, 'POLICY_CREATED' FROM insurance.risk_items WHERE policy_uid = 'b62-6';
CREATE TEMP TABLE t_items ON COMMIT DROP AS
  SELECT policy_uid, id, uid FROM insurance.risk_items WHERE policy_uid LIKE 'b62-%';
GRANT SELECT ON t_items TO insurance_service;
DELETE FROM outbox.http_requests;

CREATE FUNCTION pg_temp.item(p text) RETURNS bigint LANGUAGE sql AS $$ SELECT id FROM t_items WHERE policy_uid = p $$;
CREATE FUNCTION pg_temp.opts() RETURNS jsonb LANGUAGE sql AS $$
  SELECT '{"maxAttempts": 3, "retryBaseSeconds": 60, "retryCapSeconds": 3600,
           "chatWebhookUrl": "https://chat.example.com/hook", "claimedBy": "w1"}'::jsonb $$;
CREATE FUNCTION pg_temp.fail(retryable boolean, status text DEFAULT '503') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('status', 'FAILED', 'code', 'PROVIDER_UNAVAILABLE', 'message', 'it broke',
                            'retryable', retryable, 'httpStatus', status,
                            'requestPayload', jsonb_build_object('body', repeat('y', 4000))) $$;
CREATE FUNCTION pg_temp.ok(ext text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('status', 'SUCCESS', 'externalId', ext, 'response', jsonb_build_object('n', ext)) $$;
CREATE FUNCTION pg_temp.entry(p text, provider text, event text, outcome jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('riskItemId', pg_temp.item(p), 'provider', provider, 'event', event, 'outcome', outcome) $$;
-- One spec claimed alone (a batch of one, _begin_one raising its refusal), the PT404 answered as begin_batch does.
CREATE FUNCTION pg_temp.begin_one(_spec jsonb, _by text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  _code text;
  _message text;
  _item bigint := (_spec ->> 'riskItemId')::bigint;
BEGIN
  IF _spec ? 'orderId' THEN
    RETURN integrations._begin_one(jsonb_build_object('orderId', (_spec ->> 'orderId')::bigint), _by, 60);
  ELSIF _spec ? 'emissionId' THEN
    RETURN integrations._begin_one(jsonb_build_object('emissionId', (_spec ->> 'emissionId')::bigint), _by, 60);
  END IF;
  IF _spec ? 'riskItemUid' THEN
    SELECT id INTO _item FROM t_items WHERE uid = (_spec ->> 'riskItemUid')::uuid AND (_item IS NULL OR id = _item);
    IF _item IS NULL THEN
      _item := -1;
    END IF;
  END IF;
  RETURN integrations._begin_one(jsonb_build_object('riskItemId', _item, 'provider', _spec ->> 'provider',
                                                    'event', _spec ->> 'event'), _by, 60);
EXCEPTION WHEN SQLSTATE 'PT404' THEN
  GET STACKED DIAGNOSTICS _code = PG_EXCEPTION_DETAIL, _message = MESSAGE_TEXT;
  RETURN jsonb_build_object('refused', jsonb_build_object('status', 404, 'code', _code, 'message', _message));
END
$$;
-- What a batch leaves behind, without the times a second run draws again (the jittered
-- backoff, the leases): claims, emissions, metadata.integration, outbox rows.
CREATE FUNCTION pg_temp.key_of(_emission_id text) RETURNS text LANGUAGE sql AS $$
  SELECT (SELECT concat_ws(':', t.policy_uid, e.provider, e.event) FROM insurance.integration_emissions e
            JOIN t_items t ON t.id = e.risk_item_id WHERE e.id = _emission_id::bigint) $$;
CREATE FUNCTION pg_temp.state() RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object(
    'claims', (SELECT jsonb_agg(jsonb_build_array(c.risk_item_id, c.provider, c.event, c.claimed_by)
                                ORDER BY c.risk_item_id, c.provider, c.event)
                 FROM insurance.emission_claims c JOIN t_items t ON t.id = c.risk_item_id),
    'emissions', (SELECT jsonb_agg(to_jsonb(e) - 'next_retry_at' - 'id' || jsonb_build_object('due', e.next_retry_at IS NOT NULL)
                                   ORDER BY e.risk_item_id, e.provider, e.event)
                    FROM insurance.integration_emissions e JOIN t_items t ON t.id = e.risk_item_id),
    'metadata', (SELECT jsonb_agg(r.metadata #- '{integration,emissionId}'
                                  || jsonb_build_object('emission', pg_temp.key_of(r.metadata #>> '{integration,emissionId}'))
                                  ORDER BY r.id)
                   FROM insurance.risk_items r JOIN t_items t ON t.id = r.id),
    'outbox', (SELECT jsonb_agg(o.row ORDER BY o.row::text)
                 FROM (SELECT jsonb_build_array(o.url, o.headers - 'webhook-id',
                                                regexp_replace((o.body - 'emissionId')::text, '\d{4}-\d\d-\d\dT[^" ,]*', 'T', 'g'),
                                                pg_temp.key_of(o.body ->> 'emissionId'),
                                                o.deliver_after = coalesce(
                                                  (SELECT e.next_retry_at FROM insurance.integration_emissions e
                                                    WHERE e.id = (o.body ->> 'emissionId')::bigint), now())) AS row
                         FROM outbox.http_requests o) o))
$$;
CREATE FUNCTION pg_temp.no_times(_answers jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_agg(a - 'nextRetryAt' - 'emissionId'
                   || jsonb_build_object('due', a -> 'nextRetryAt' <> 'null', 'emission', pg_temp.key_of(a ->> 'emissionId'))
                   ORDER BY n)
    FROM jsonb_array_elements(_answers) WITH ORDINALITY AS x(a, n)
$$;

-- The stored states a batch meets: a SUCCESS (b62-3), a FAILED due (b62-7) and not due
-- (b62-8), a key another caller holds (b62-4).
SELECT pg_temp.act_as('insurance_service');
SELECT integrations.record_emission(pg_temp.item('b62-3'), 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.ok('S-3'), pg_temp.opts()),
       integrations.record_emission(pg_temp.item('b62-7'), 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(true), pg_temp.opts()),
       integrations.record_emission(pg_temp.item('b62-8'), 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(true), pg_temp.opts()),
       integrations._begin_one(jsonb_build_object('riskItemId', pg_temp.item('b62-4'), 'event', 'SALES_DISPATCH'), 'w9', 60);
SELECT pg_temp.as_operator();
SELECT pg_temp.age_rows('insurance.integration_emissions', '1 day', format('risk_item_id = %s', pg_temp.item('b62-7')));

-- ---------------------------------------------------------------- begin_batch
SELECT jsonb_build_array(
  jsonb_build_object('riskItemId', pg_temp.item('b62-1'), 'event', 'SALES_DISPATCH'),             -- claimed
  jsonb_build_object('riskItemId', pg_temp.item('b62-none'), 'event', 'SALES_DISPATCH'),          -- skipped
  jsonb_build_object('riskItemId', pg_temp.item('b62-3'), 'event', 'SALES_DISPATCH'),             -- SUCCESS
  jsonb_build_object('riskItemId', pg_temp.item('b62-4'), 'event', 'SALES_DISPATCH'),             -- IN_PROGRESS
  jsonb_build_object('riskItemId', -1, 'event', 'SALES_DISPATCH'),                                -- refused
  jsonb_build_object('orderId', (SELECT id FROM insurance.orders WHERE risk_item_id = pg_temp.item('b62-6'))), -- order
  jsonb_build_object('emissionId', (SELECT id FROM insurance.integration_emissions
                                     WHERE risk_item_id = pg_temp.item('b62-7'))),               -- retry, due
  jsonb_build_object('emissionId', (SELECT id FROM insurance.integration_emissions
                                     WHERE risk_item_id = pg_temp.item('b62-8'))),               -- retry, not due
  jsonb_build_object('riskItemId', pg_temp.item('b62-1'), 'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH'), -- again
  jsonb_build_object('riskItemId', pg_temp.item('b62-3'), 'event', 'SALES_DISPATCH'),             -- again, SUCCESS
  jsonb_build_object('riskItemUid', (SELECT uid FROM t_items WHERE policy_uid = 'b62-9'),
                     'provider', 'PROVIDER_B', 'event', 'BENEFICIARIES_SYNC'),                    -- by uid
  jsonb_build_object('riskItemId', pg_temp.item('b62-10'),
                     'riskItemUid', (SELECT uid FROM t_items WHERE policy_uid = 'b62-9'), 'event', 'SALES_DISPATCH'), -- two items
  jsonb_build_object('orderId', -1),
  jsonb_build_object('emissionId', -1)) AS specs \gset

CREATE FUNCTION pg_temp.begin_each(_specs jsonb, _by text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  _out jsonb := '[]';
  _s jsonb;
BEGIN
  FOR _s IN SELECT s FROM jsonb_array_elements(_specs) WITH ORDINALITY AS x(s, n) ORDER BY n LOOP
    _out := _out || jsonb_build_array(pg_temp.begin_one(_s, _by));
  END LOOP;
  RETURN _out;
END
$$;
SELECT pg_temp.act_as('insurance_service');
SAVEPOINT before_begin;
SELECT integrations.begin_batch(:'specs', 'w1') AS batch, pg_temp.state() AS batch_state \gset
ROLLBACK TO SAVEPOINT before_begin;
SELECT pg_temp.begin_each(:'specs', 'w1') AS sequence, pg_temp.state() AS sequence_state \gset

SELECT is((SELECT jsonb_agg(coalesce(CASE WHEN (a ->> 'claimed')::boolean THEN 'claimed' END, a ->> 'status',
                                     a #>> '{refused,code}') ORDER BY n)
             FROM jsonb_array_elements(:'batch') WITH ORDINALITY AS x(a, n)),
          '["claimed", "skipped", "SUCCESS", "IN_PROGRESS", "RISK_ITEM_NOT_FOUND", "claimed", "claimed", "FAILED",
            "IN_PROGRESS", "SUCCESS", "claimed", "RISK_ITEM_NOT_FOUND", "ORDER_NOT_FOUND", "EMISSION_NOT_FOUND"]'::jsonb,
          'a mixed batch: claimed, skipped, SUCCESS, IN_PROGRESS, refused, order, retry, a key named twice, by uid');
SELECT is(:'batch'::jsonb, :'sequence'::jsonb, 'begin_batch answers each spec as the single-key calls one after the other');
SELECT is(:'batch_state'::jsonb, :'sequence_state'::jsonb, 'and leaves the same claims behind');
SELECT is((:'batch'::jsonb) -> 8, jsonb_build_object('claimed', false, 'status', 'IN_PROGRESS', 'emissionId', null,
                                                     'riskItemId', pg_temp.item('b62-1'),
                                                     'riskItemUid', (SELECT uid FROM t_items WHERE policy_uid = 'b62-1'),
                                                     'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH'),
          'a key named twice: the second is IN_PROGRESS, held by the first');
SELECT is((:'batch'::jsonb) #>> '{5,orderId}', (SELECT id FROM insurance.orders WHERE risk_item_id = pg_temp.item('b62-6'))::text,
          'an order''s answer carries its orderId');
SELECT is((:'batch'::jsonb) #> '{0,item}', integrations.standard_risk_item(pg_temp.item('b62-1')),
          'a claimed key comes with its StandardRiskItem');

-- ---------------------------------------------------------------- record_batch
SELECT jsonb_build_array(
  pg_temp.entry('b62-11', 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.ok('E-11')),      -- (none) -> SUCCESS
  pg_temp.entry('b62-12', 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(true)),      -- (none) -> FAILED
  pg_temp.entry('b62-13', 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(false)),     -- (none) -> ABANDONED
  pg_temp.entry('b62-3', 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(true)),       -- SUCCESS stays
  pg_temp.entry('b62-7', 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.ok('E-7')),        -- FAILED -> SUCCESS
  pg_temp.entry('b62-8', 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(true)),       -- FAILED -> FAILED
  pg_temp.entry('b62-14', 'MAIL_PROVIDER', 'POLICY_CREATED', pg_temp.fail(true)),   -- no metadata
  pg_temp.entry('b62-15', 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.ok('E-15a')),     -- one item, two providers:
  pg_temp.entry('b62-15', 'PROVIDER_B', 'SALES_DISPATCH', pg_temp.fail(false))      -- the last one wins
) AS outcomes \gset
CREATE FUNCTION pg_temp.record_each(_outcomes jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  _out jsonb := '[]';
  _o jsonb;
BEGIN
  FOR _o IN SELECT o FROM jsonb_array_elements(_outcomes) WITH ORDINALITY AS x(o, n) ORDER BY n LOOP
    _out := _out || jsonb_build_array(integrations.record_emission((_o ->> 'riskItemId')::bigint, _o ->> 'provider',
                                                                   _o ->> 'event', _o -> 'outcome', pg_temp.opts()));
  END LOOP;
  RETURN _out;
END
$$;
SAVEPOINT before_record;
SELECT integrations.record_batch(:'outcomes', pg_temp.opts()) AS batch \gset
SELECT pg_temp.no_times(:'batch') AS batch_answers, pg_temp.state() AS batch_state \gset
ROLLBACK TO SAVEPOINT before_record;
SELECT pg_temp.record_each(:'outcomes') AS sequence \gset
SELECT pg_temp.no_times(:'sequence') AS sequence_answers, pg_temp.state() AS sequence_state \gset
SELECT is((SELECT jsonb_agg(a ->> 'status' ORDER BY n) FROM jsonb_array_elements(:'batch') WITH ORDINALITY AS x(a, n)),
          '["SUCCESS", "FAILED", "ABANDONED", "SUCCESS", "SUCCESS", "FAILED", "FAILED", "SUCCESS", "ABANDONED"]'::jsonb,
          'a mixed batch of outcomes: every transition');
SELECT is(:'batch_answers'::jsonb, :'sequence_answers'::jsonb,
          'record_batch answers each outcome as record_emission one after the other');
SELECT is(:'batch_state'::jsonb, :'sequence_state'::jsonb,
          'and stores the same: emissions, metadata.integration, chat notices, delayed /retry at next_retry_at, claims');
SELECT is((SELECT (metadata #>> '{integration,provider}') || ' ' || (metadata #>> '{integration,state}')
             FROM insurance.risk_items WHERE id = pg_temp.item('b62-15')),
          'PROVIDER_B ABANDONED', 'two sales dispatches of one item in a batch: metadata.integration tells the last');

-- A key twice in one batch: recorded one after the other (attempts 1, then 2).
SELECT is((SELECT jsonb_agg(jsonb_build_array(a ->> 'status', a -> 'attempts') ORDER BY n)
             FROM jsonb_array_elements(integrations.record_batch(jsonb_build_array(
                    pg_temp.entry('b62-16', 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(true)),
                    pg_temp.entry('b62-17', 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.ok('E-17')),
                    pg_temp.entry('b62-16', 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(true))), pg_temp.opts()))
                  WITH ORDINALITY AS x(a, n)),
          '[["FAILED", 1], ["SUCCESS", 1], ["FAILED", 2]]'::jsonb,
          'a key twice in one batch is recorded twice, in order');
SELECT is((SELECT count(*)::int FROM outbox.http_requests o
            WHERE o.url = '/api/integrations/retry'
              AND (o.body ->> 'emissionId')::bigint = (SELECT id FROM insurance.integration_emissions
                                                       WHERE risk_item_id = pg_temp.item('b62-16'))), 2,
          'each of its two failures queued its /retry');

-- One outcome that cannot be stored: the others are stored set-based... or one by one; all of them are.
SELECT is((SELECT jsonb_agg(jsonb_build_array(a ->> 'status', a #>> '{error,code}') ORDER BY n)
             FROM jsonb_array_elements(integrations.record_batch(jsonb_build_array(
                    pg_temp.entry('b62-18', 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.ok('E-18')),
                    pg_temp.entry('b62-19', 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(true, 'five hundred')),
                    pg_temp.entry('b62-20', 'PROVIDER_A', 'SALES_DISPATCH', pg_temp.fail(false))), pg_temp.opts()))
                  WITH ORDINALITY AS x(a, n)),
          '[["SUCCESS", null], ["FAILED", "OUTCOME_UNRECORDABLE"], ["ABANDONED", "PROVIDER_UNAVAILABLE"]]'::jsonb,
          'a batch with an outcome that cannot be stored: that one FAILED OUTCOME_UNRECORDABLE, the others stored');

-- ---------------------------------------------------------------- one call, not one per emission
SELECT pg_temp.as_operator();
SET LOCAL track_functions = 'all';
CREATE FUNCTION pg_temp.calls(_fn regprocedure) RETURNS bigint LANGUAGE sql AS $$
  SELECT coalesce(pg_stat_get_xact_function_calls(_fn), 0) $$;
SELECT pg_temp.calls('integrations.record_emission(bigint, text, text, jsonb, jsonb)') AS record_before,
       pg_temp.calls('integrations._record_outcomes(jsonb, jsonb)') AS core_before,
       pg_temp.calls('integrations.standard_risk_item(bigint)') AS item_before,
       pg_temp.calls('integrations.standard_risk_items(bigint[])') AS items_before,
       pg_temp.calls('integrations._begin_one(jsonb, text, integer)') AS one_before \gset
SELECT pg_temp.act_as('insurance_service');
SELECT integrations.begin_batch((SELECT jsonb_agg(jsonb_build_object('riskItemId', id, 'provider', 'PROVIDER_C',
                                                                     'event', 'COUNTED'))
                                   FROM t_items WHERE policy_uid <> 'b62-none' LIMIT 25), 'w1') IS NOT NULL AS begun,
       integrations.record_batch((SELECT jsonb_agg(jsonb_build_object('riskItemId', id, 'provider', 'PROVIDER_C',
                                                                      'event', 'COUNTED', 'outcome', pg_temp.ok('C')))
                                    FROM (SELECT id FROM t_items WHERE policy_uid <> 'b62-none' LIMIT 25) t),
                                 pg_temp.opts()) IS NOT NULL AS recorded \gset
SELECT pg_temp.as_operator();
SELECT is(ARRAY[pg_temp.calls('integrations._begin_one(jsonb, text, integer)') - :one_before,
                pg_temp.calls('integrations.standard_risk_item(bigint)') - :item_before,
                pg_temp.calls('integrations.standard_risk_items(bigint[])') - :items_before],
          ARRAY[0, 0, 1]::bigint[],
          'begin_batch of 25: no per-key begin, the 25 StandardRiskItems built by one call');
SELECT is(ARRAY[pg_temp.calls('integrations.record_emission(bigint, text, text, jsonb, jsonb)') - :record_before,
                pg_temp.calls('integrations._record_outcomes(jsonb, jsonb)') - :core_before],
          ARRAY[0, 1]::bigint[],
          'record_batch of 25: the state machine runs once, record_emission never');

SELECT * FROM finish();
ROLLBACK;
