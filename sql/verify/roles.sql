-- Verify insurance:roles on pg
DO $$
BEGIN
  ASSERT (SELECT count(*) FROM pg_catalog.pg_roles WHERE rolname IN ('insurance_owner', 'insurance_app',
          'insurance_cron', 'insurance_anon', 'insurance_holder', 'insurance_channel', 'insurance_service',
          'insurance_dashboard')) = 8, 'a role is missing';
  ASSERT NOT (SELECT rolsuper OR rolbypassrls OR rolinherit FROM pg_catalog.pg_roles
              WHERE rolname = 'insurance_app'), 'insurance_app must not bypass RLS or inherit';
  ASSERT NOT (SELECT rolsuper OR rolbypassrls FROM pg_catalog.pg_roles
              WHERE rolname = 'insurance_cron'), 'insurance_cron must not be a superuser or bypass RLS';
  ASSERT pg_has_role('insurance_app', 'insurance_holder', 'MEMBER'), 'insurance_app cannot switch roles';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_db_role_setting s JOIN pg_catalog.pg_database d ON d.oid = s.setdatabase
                  WHERE d.datname = current_database() AND s.setrole = 'insurance_app'::regrole
                    AND 'statement_timeout=5s' = ANY (s.setconfig)), 'insurance_app has no statement_timeout';
END
$$;
