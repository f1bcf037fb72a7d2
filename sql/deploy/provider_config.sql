-- Deploy insurance:provider_config to pg
-- requires: entry_point_roles
-- Rework: the require_role guard (the orchestrator reads it as insurance_service).
BEGIN;
SET LOCAL ROLE insurance_owner;

-- provider_config(slug): the provider's auth_config, or NULL when no row exists.
CREATE OR REPLACE FUNCTION integrations.provider_config(slug text) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT insurance.require_role('insurance_service');
  SELECT i.auth_config FROM insurance.integrations i WHERE i.slug = pg_catalog.upper(provider_config.slug)
$$;
COMMIT;
