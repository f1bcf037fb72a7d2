-- Verify insurance:schemas on pg
DO $$
BEGIN
  ASSERT (SELECT count(*) FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles r ON r.oid = n.nspowner
          WHERE r.rolname = 'insurance_owner'
            AND n.nspname IN ('insurance', 'postsales', 'gateway', 'integrations', 'outbox', 'dashboard', 'admin', 'webhooks')) = 8,
         'a schema is missing or not owned by insurance_owner';
  ASSERT public.digest('x', 'sha256') IS NOT NULL, 'pgcrypto is missing';
END
$$;
