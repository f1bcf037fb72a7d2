-- Verify insurance:roles on pg
DO $$
BEGIN
  ASSERT (SELECT count(*) FROM pg_catalog.pg_roles WHERE rolname IN ('insurance_owner', 'insurance_app',
          'insurance_anon', 'insurance_holder', 'insurance_channel', 'insurance_service',
          'insurance_dashboard')) = 7, 'a role is missing';
  ASSERT NOT (SELECT rolsuper OR rolbypassrls OR rolinherit FROM pg_catalog.pg_roles
              WHERE rolname = 'insurance_app'), 'insurance_app must not bypass RLS or inherit';
  ASSERT pg_has_role('insurance_app', 'insurance_holder', 'MEMBER'), 'insurance_app cannot switch roles';
END
$$;
