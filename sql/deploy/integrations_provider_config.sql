-- Deploy insurance:integrations_provider_config to pg
-- The orchestrator reads a provider's auth_config through provider_config() (and caches it
-- for a few seconds); the command line writes it through admin.set_integration, which calls
-- set_provider_config().
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE FUNCTION integrations.provider_config(_slug text) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT insurance.require_role('insurance_service');
  SELECT i.auth_config FROM insurance.integrations i WHERE i.slug = pg_catalog.upper(_slug)
$$;
COMMENT ON FUNCTION integrations.provider_config(text) IS
  'The auth_config of provider _slug (any case), or NULL when it has no row. Service role.';
REVOKE ALL ON FUNCTION integrations.provider_config(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations.provider_config(text) TO insurance_service, insurance_app;

CREATE FUNCTION integrations.set_provider_config(_slug text, _auth_config jsonb) RETURNS jsonb
LANGUAGE sql SET search_path = '' AS $$
  INSERT INTO insurance.integrations AS i (slug, auth_config)
  VALUES (pg_catalog.upper(_slug), _auth_config)
  ON CONFLICT (slug) DO UPDATE SET auth_config = EXCLUDED.auth_config
  RETURNING pg_catalog.jsonb_build_object('slug', i.slug, 'updatedAt', i.updated_at)
$$;
COMMENT ON FUNCTION integrations.set_provider_config(text, jsonb) IS
  'Creates or replaces provider _slug (upper-cased) with _auth_config; returns {slug, updatedAt}. Operators only '
  '(admin.set_integration audits it).';
REVOKE ALL ON FUNCTION integrations.set_provider_config(text, jsonb) FROM PUBLIC;

COMMIT;
