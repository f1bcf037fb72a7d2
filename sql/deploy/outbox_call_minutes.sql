-- Deploy insurance:outbox_call_minutes to pg
-- record_timed_deliveries: what the worker calls to record its outcomes. A partner webhook's
-- outcome carries ms, the endpoint's answer time as the worker measured it; they are noted as
-- target WEBHOOKS in insurance.provider_call_minutes (one appended row per call of this
-- function) in the transaction that records them, for the back-office's health chart.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- record_timed_deliveries(worker, results, max_attempts): outbox.record_deliveries, and the
-- webhook calls noted. results: [{id, status, error, retry?, retryIn?, defer?, ms?}].
CREATE FUNCTION outbox.record_timed_deliveries(_worker text, _results jsonb, _max_attempts integer DEFAULT 20)
RETURNS integer
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_service');
  IF pg_catalog.jsonb_path_exists(_results, '$[*].ms') THEN
    PERFORM integrations._note_calls((
      SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'target', 'WEBHOOKS', 'ms', x -> 'ms',
               'failed', coalesce((x ->> 'status')::integer NOT BETWEEN 200 AND 299, true)))
        FROM pg_catalog.jsonb_array_elements(_results) x
       WHERE pg_catalog.jsonb_typeof(x -> 'ms') = 'number'));
  END IF;
  RETURN outbox.record_deliveries(_worker, _results, _max_attempts);
END
$$;
COMMENT ON FUNCTION outbox.record_timed_deliveries(text, jsonb, integer) IS
  'outbox.record_deliveries(_worker, _results, _max_attempts) (how many were delivered), with the partner webhook '
  'calls whose results carry ms noted for the current minute as target WEBHOOKS in insurance.provider_call_minutes. '
  'The worker (service role).';
REVOKE ALL ON FUNCTION outbox.record_timed_deliveries(text, jsonb, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.record_timed_deliveries(text, jsonb, integer) TO insurance_service, insurance_app;

COMMIT;
