-- Deploy insurance:admin_integrations to pg
-- Command line: insurer integrations and their auth_config (audited)
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- ---------------------------------------------------------------- providers

-- set_integration: create or replace a provider's auth_config (the caller has checked it
-- against the adapter); the audit row names its keys, never its values.
CREATE FUNCTION admin.set_integration(_actor text, _slug text, _auth_config jsonb)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _out jsonb := integrations.set_provider_config(_slug, _auth_config);
BEGIN
  PERFORM insurance.record_audit(_actor, 'integrations.set', pg_catalog.jsonb_build_array(_out ->> 'slug'), 'ok',
            pg_catalog.jsonb_build_object('keys', (SELECT coalesce(pg_catalog.jsonb_agg(k ORDER BY k), '[]')
                                                     FROM pg_catalog.jsonb_object_keys(_auth_config) k)));
  RETURN _out;
END
$$;
COMMENT ON FUNCTION admin.set_integration(text, text, jsonb) IS
  'Creates or replaces provider _slug''s auth_config (checked against the adapter by the caller); '
  'audited without the credentials; returns {slug, updatedAt}. Operators.';

-- delete_integration: forget a provider's configuration; INTEGRATION_NOT_FOUND otherwise.
CREATE FUNCTION admin.delete_integration(_actor text, _slug text)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
  DELETE FROM insurance.integrations i WHERE i.slug = pg_catalog.upper(_slug);
  IF NOT FOUND THEN
    RETURN admin._refused(_actor, 'integrations.delete', pg_catalog.jsonb_build_array(pg_catalog.upper(_slug)),
                          'INTEGRATION_NOT_FOUND', pg_catalog.format('no provider configuration for %s', _slug));
  END IF;
  PERFORM insurance.record_audit(_actor, 'integrations.delete', pg_catalog.jsonb_build_array(pg_catalog.upper(_slug)));
  RETURN pg_catalog.jsonb_build_object('slug', pg_catalog.upper(_slug), 'deleted', true);
END
$$;
COMMENT ON FUNCTION admin.delete_integration(text, text) IS
  'Forgets provider _slug''s configuration; audited; refuses INTEGRATION_NOT_FOUND. Operators.';

-- list_integrations: every provider with its auth_config (the caller masks credentials).
CREATE FUNCTION admin.list_integrations()
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = ''
AS $$
  SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'slug', i.slug, 'auth_config', i.auth_config, 'updated_at', i.updated_at) ORDER BY i.slug), '[]')
    FROM insurance.integrations i
$$;
COMMENT ON FUNCTION admin.list_integrations() IS
  'Every provider with its auth_config (the caller masks credentials), as a JSON array. Operators.';

COMMIT;
