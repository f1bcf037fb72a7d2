-- Deploy insurance:integrations_pause to pg
-- Pause and resume an insurer (insurance.provider_pauses). While paused, integrations.begin_batch
-- claims none of its keys and the retry sweep queues none of its emissions: they wait without
-- spending attempts. Resuming queues its due emissions at once. The callers (the back-office,
-- the command line) write the audit rows.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- pause_provider(provider, until): pause it (again: the new until replaces the old one).
CREATE FUNCTION integrations.pause_provider(_provider text, _until timestamptz) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _p insurance.provider_pauses;
BEGIN
  IF _provider IS NULL OR _provider !~ '^[A-Z][A-Z0-9_]{0,63}$' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'provider must be a code such as PROVIDER_A',
                          DETAIL = 'VALIDATION_ERROR',
                          HINT = '[{"field": "provider", "message": "a provider code such as PROVIDER_A"}]';
  END IF;
  IF _until IS NOT NULL AND _until <= pg_catalog.now() THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'until must be in the future', DETAIL = 'VALIDATION_ERROR',
                          HINT = '[{"field": "until", "message": "must be in the future"}]';
  END IF;
  INSERT INTO insurance.provider_pauses AS z (provider, paused_at, until)
  VALUES (_provider, pg_catalog.now(), _until)
  ON CONFLICT (provider) DO UPDATE SET until = excluded.until
  RETURNING * INTO _p;
  RETURN pg_catalog.jsonb_build_object('provider', _p.provider, 'paused', true, 'pausedAt', _p.paused_at,
                                       'until', _p.until);
END
$$;
COMMENT ON FUNCTION integrations.pause_provider(text, timestamptz) IS
  'Pauses provider _provider until _until (NULL: until resumed; a pause again sets the new end); returns {provider, '
  'paused: true, pausedAt, until}; raises PT400 VALIDATION_ERROR for a bad code or an end not in the future. '
  'Owner-run callers that audit it (admin.pause_provider, dashboard.pause_provider).';
REVOKE ALL ON FUNCTION integrations.pause_provider(text, timestamptz) FROM PUBLIC;

-- resume_provider(provider): end its pause and queue a /retry for each of its due FAILED
-- emissions that has none pending (those the pause held back), through the due index.
CREATE FUNCTION integrations.resume_provider(_provider text) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _was insurance.provider_pauses;
  _queued integer;
BEGIN
  DELETE FROM insurance.provider_pauses z WHERE z.provider = _provider RETURNING * INTO _was;
  SELECT count(outbox.http_post('/api/integrations/retry', pg_catalog.jsonb_build_object('emissionId', e.id),
                                '{}', NULL))
    INTO _queued
    FROM insurance.integration_emissions e
   WHERE e.status = 'FAILED' AND e.next_retry_at <= pg_catalog.now() AND e.provider = _provider
     AND NOT integrations.retry_pending(e.id);
  RETURN pg_catalog.jsonb_build_object('provider', _provider, 'paused', false, 'wasPaused', _was.provider IS NOT NULL,
                                       'retriesQueued', _queued);
END
$$;
COMMENT ON FUNCTION integrations.resume_provider(text) IS
  'Ends provider _provider''s pause (if any) and queues /retry for its due FAILED emissions without one pending; '
  'returns {provider, paused: false, wasPaused, retriesQueued}. Owner-run callers that audit it.';
REVOKE ALL ON FUNCTION integrations.resume_provider(text) FROM PUBLIC;

-- paused_providers(): {provider: {pausedAt, until}} of the pauses in force now.
CREATE FUNCTION integrations.paused_providers() RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT coalesce(pg_catalog.jsonb_object_agg(z.provider, pg_catalog.jsonb_build_object(
           'pausedAt', z.paused_at, 'until', z.until)), '{}')
    FROM insurance.provider_pauses z
   WHERE z.until IS NULL OR z.until > pg_catalog.now()
$$;
COMMENT ON FUNCTION integrations.paused_providers() IS
  'The pauses in force now: {provider: {pausedAt, until}} (until NULL: until resumed by hand). Service and '
  'dashboard roles.';
REVOKE ALL ON FUNCTION integrations.paused_providers() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations.paused_providers() TO insurance_service, insurance_dashboard;

COMMIT;
