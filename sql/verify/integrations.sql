-- Verify insurance:integrations on pg
SELECT slug, auth_config, created_at, updated_at FROM insurance.integrations WHERE false;
