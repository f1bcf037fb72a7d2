-- Revert insurance:provider_config from pg
-- Back to the @v1.0 function, without the guard.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- provider_config(slug): the provider's auth_config, or NULL when no row exists.
CREATE OR REPLACE FUNCTION integrations.provider_config(slug text) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT i.auth_config FROM insurance.integrations i WHERE i.slug = pg_catalog.upper(provider_config.slug)
$$;
COMMIT;
