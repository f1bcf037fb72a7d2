-- Deploy insurance:integrations_call_minutes to pg
-- record_calls: what the pipeline calls to record a batch of provider outcomes. Each outcome
-- may carry elapsedMs, the insurer's answer time (from the request to its last byte, as the
-- pipeline measured it); the batch adds one row per provider to insurance.provider_call_minutes
-- (calls, failures, answer-time histogram) in the transaction that records the outcomes. One
-- INSERT per batch, append-only: no batch waits on another's counter.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- _note_calls(rows): one appended row per target for the current minute.
-- SECURITY DEFINER: the service role does not write the table itself.
CREATE FUNCTION integrations._note_calls(_rows jsonb) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  -- _rows: [{target, ms, failed}], calls without an answer time left out by the caller.
  WITH c AS (
    SELECT x ->> 'target' AS target, coalesce((x ->> 'failed')::boolean, false) AS failed,
           pg_catalog.width_bucket((x ->> 'ms')::numeric, insurance.provider_call_buckets()) AS b
      FROM pg_catalog.jsonb_array_elements(_rows) x
     WHERE x ->> 'target' ~ '^[A-Z][A-Z0-9_]{0,63}$' AND pg_catalog.jsonb_typeof(x -> 'ms') = 'number'
  )
  INSERT INTO insurance.provider_call_minutes (minute, target, calls, failures, buckets)
  SELECT pg_catalog.date_trunc('minute', pg_catalog.now()), t.target, t.calls, t.failures,
         -- bucket 0: under the first bound; bucket i: from bound i up to bound i + 1; the last is open
         ARRAY(SELECT count(d.b)::integer FROM pg_catalog.generate_series(0, pg_catalog.cardinality(insurance.provider_call_buckets())) g(i)
                 LEFT JOIN c d ON d.target = t.target AND d.b = g.i
                GROUP BY g.i ORDER BY g.i)
    FROM (SELECT c.target, count(*) AS calls, count(*) FILTER (WHERE c.failed) AS failures FROM c GROUP BY c.target) t;
END
$$;
COMMENT ON FUNCTION integrations._note_calls(jsonb) IS
  'Appends, for the current minute, one insurance.provider_call_minutes row per target of _rows [{target, ms, '
  'failed}]: calls, failures, answer times per bucket (insurance.provider_call_buckets). Private helper of '
  'record_calls and outbox.record_webhook_calls.';
REVOKE ALL ON FUNCTION integrations._note_calls(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations._note_calls(jsonb) TO insurance_service;

-- record_calls(outcomes, options): integrations.record_batch, and the batch's provider calls noted.
-- outcomes: [{"riskItemId", "provider", "event", "outcome", "elapsedMs"?}].
CREATE FUNCTION integrations.record_calls(_outcomes jsonb, _options jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  PERFORM integrations._note_calls(coalesce((
    SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
             'target', x ->> 'provider', 'ms', x -> 'elapsedMs',
             'failed', coalesce(x #>> '{outcome,status}', '') <> 'SUCCESS'))
      FROM pg_catalog.jsonb_array_elements(_outcomes) x
     WHERE pg_catalog.jsonb_typeof(x -> 'elapsedMs') = 'number'), '[]'));
  RETURN integrations.record_batch(_outcomes, _options);
END
$$;
COMMENT ON FUNCTION integrations.record_calls(jsonb, jsonb) IS
  'integrations.record_batch(_outcomes, _options) (its answer), with the batch''s provider calls (outcomes that '
  'carry elapsedMs) noted per provider for the current minute in insurance.provider_call_minutes. Service role.';
REVOKE ALL ON FUNCTION integrations.record_calls(jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations.record_calls(jsonb, jsonb) TO insurance_service, insurance_app;

COMMIT;
