-- Deploy insurance:admin_providers to pg
-- Command line: pause and resume an insurer (`python -m app providers pause|resume|list`), audited.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- pause_provider(actor, provider, until): integrations.pause_provider, audited providers.pause.
CREATE FUNCTION admin.pause_provider(_actor text, _provider text, _until timestamptz) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _out jsonb;
BEGIN
  IF _until IS NOT NULL AND _until <= pg_catalog.now() THEN
    RETURN admin._refused(_actor, 'providers.pause', pg_catalog.jsonb_build_array(_provider), 'UNTIL_IN_THE_PAST',
                          '--until must be in the future');
  END IF;
  _out := integrations.pause_provider(pg_catalog.upper(_provider), _until);
  PERFORM insurance.record_audit(_actor, 'providers.pause', pg_catalog.jsonb_build_array(_out ->> 'provider'), 'ok',
                                 pg_catalog.jsonb_build_object('until', _until));
  RETURN _out;
END
$$;
COMMENT ON FUNCTION admin.pause_provider(text, text, timestamptz) IS
  'Pauses provider _provider until _until (NULL: until resumed), audited providers.pause; refuses UNTIL_IN_THE_PAST; '
  'returns {provider, paused, pausedAt, until}. Operators.';

-- resume_provider(actor, provider): integrations.resume_provider, audited providers.resume;
-- PROVIDER_NOT_PAUSED when there was no pause in force.
CREATE FUNCTION admin.resume_provider(_actor text, _provider text) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _out jsonb;
BEGIN
  IF NOT integrations.paused_providers() ? pg_catalog.upper(_provider) THEN
    RETURN admin._refused(_actor, 'providers.resume', pg_catalog.jsonb_build_array(pg_catalog.upper(_provider)),
                          'PROVIDER_NOT_PAUSED', pg_catalog.format('%s is not paused', pg_catalog.upper(_provider)));
  END IF;
  _out := integrations.resume_provider(pg_catalog.upper(_provider));
  PERFORM insurance.record_audit(_actor, 'providers.resume', pg_catalog.jsonb_build_array(_out ->> 'provider'), 'ok',
                                 pg_catalog.jsonb_build_object('retriesQueued', _out -> 'retriesQueued'));
  RETURN _out;
END
$$;
COMMENT ON FUNCTION admin.resume_provider(text, text) IS
  'Resumes provider _provider (its due emissions queued at once), audited providers.resume; refuses '
  'PROVIDER_NOT_PAUSED; returns {provider, paused, wasPaused, retriesQueued}. Operators.';

-- list_provider_pauses(): the pauses in force.
CREATE FUNCTION admin.list_provider_pauses() RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT integrations.paused_providers()
$$;
COMMENT ON FUNCTION admin.list_provider_pauses() IS
  'The pauses in force: {provider: {pausedAt, until}}. Operators.';

COMMIT;
