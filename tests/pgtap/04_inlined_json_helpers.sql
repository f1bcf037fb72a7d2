-- The JSON helpers of the hot routes are inlined into their callers' plans (BEGIN ATOMIC
-- bodies without a SET clause): a call that stays a function call is planned again by every
-- statement that makes it. Proved on the plan itself: EXPLAIN VERBOSE names a function that
-- is called, and shows only its body when it is inlined.
BEGIN;
SELECT plan(8);

CREATE FUNCTION pg_temp.plan_of(_query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  _line text;
  _plan text := '';
BEGIN
  FOR _line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || _query LOOP
    _plan := _plan || _line || E'\n';
  END LOOP;
  RETURN _plan;
END
$$;

SELECT unalike(pg_temp.plan_of('SELECT dashboard._emission_json(e, r) FROM insurance.integration_emissions e '
                              'JOIN insurance.risk_items r ON r.id = e.risk_item_id'),
              '%_emission_json%', 'dashboard._emission_json is inlined');
SELECT unalike(pg_temp.plan_of('SELECT integrations.emission_json(e) FROM insurance.integration_emissions e'),
              '%emission_json%', 'integrations.emission_json is inlined');
SELECT unalike(pg_temp.plan_of('SELECT insurance.beneficiary_json(b) FROM insurance.beneficiaries b'),
              '%beneficiary_json%', 'insurance.beneficiary_json is inlined');
SELECT unalike(pg_temp.plan_of('SELECT outbox.is_final(s) FROM generate_series(100, 600) s'),
              '%is_final%', 'outbox.is_final is inlined');

-- Same answers as before.
SELECT is(outbox.is_final(NULL), false, 'no answer is not final');
SELECT is(array_agg(s ORDER BY s) FILTER (WHERE NOT outbox.is_final(s)),
          '{408,409,425,429,500,502,503}'::int[], 'timeouts, conflicts, rate limits and 5xx are retried')
  FROM unnest('{200,201,400,404,408,409,422,425,429,500,502,503}'::int[]) s;
SELECT is(dashboard._emission_json(jsonb_populate_record(NULL::insurance.integration_emissions,
            '{"id": 7, "status": "FAILED", "error_history": [{"code": "A"}, {"code": "B"}]}'),
            jsonb_populate_record(NULL::insurance.risk_items, '{"policy_uid": "P-7"}')) -> 'lastError',
          '{"code": "B"}', 'lastError is the newest entry of error_history');
SELECT is(integrations.emission_json(jsonb_populate_record(NULL::insurance.integration_emissions,
            '{"id": 7, "status": "SUCCESS", "error_history": [{"code": "A"}]}')) ->> 'error',
          NULL, 'a successful emission reports no error');

SELECT * FROM finish();
ROLLBACK;
