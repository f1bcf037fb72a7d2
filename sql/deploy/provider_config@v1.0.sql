-- Deploy insurance:provider_config to pg
-- requires: integrations
-- The orchestrator reads a provider's auth_config through this function (and caches it
-- for a few seconds); the command line writes it through integrations.set_provider_config.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- provider_config(slug): the provider's auth_config, or NULL when no row exists.
CREATE FUNCTION integrations.provider_config(slug text) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT i.auth_config FROM insurance.integrations i WHERE i.slug = pg_catalog.upper(provider_config.slug)
$$;
REVOKE ALL ON FUNCTION integrations.provider_config(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations.provider_config(text) TO insurance_service, insurance_app;

-- set_provider_config(slug, auth_config): creates or replaces a provider's row (operators only).
CREATE FUNCTION integrations.set_provider_config(slug text, auth_config jsonb) RETURNS jsonb
LANGUAGE sql SET search_path = '' AS $$
  INSERT INTO insurance.integrations AS i (slug, auth_config)
  VALUES (pg_catalog.upper(set_provider_config.slug), set_provider_config.auth_config)
  ON CONFLICT (slug) DO UPDATE SET auth_config = EXCLUDED.auth_config
  RETURNING pg_catalog.jsonb_build_object('slug', i.slug, 'updatedAt', i.updated_at)
$$;
REVOKE ALL ON FUNCTION integrations.set_provider_config(text, jsonb) FROM PUBLIC;

COMMIT;
