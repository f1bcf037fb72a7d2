-- Revert insurance:roles from pg
-- Roles are shared by the cluster: drop each one only when no other database still uses it.
BEGIN;

REVOKE SELECT ON sqitch.changes FROM insurance_app;
REVOKE USAGE ON SCHEMA sqitch FROM insurance_app;

DO $$
DECLARE
  _role text;
BEGIN
  FOREACH _role IN ARRAY ARRAY['insurance_app', 'insurance_cron'] LOOP
    EXECUTE format('ALTER ROLE %I IN DATABASE %I RESET ALL', _role, current_database());
  END LOOP;
  EXECUTE format('REVOKE ALL ON DATABASE %I FROM insurance_owner, insurance_app, insurance_cron', current_database());
  FOREACH _role IN ARRAY ARRAY['insurance_app', 'insurance_cron', 'insurance_owner', 'insurance_anon',
                               'insurance_holder', 'insurance_channel', 'insurance_service', 'insurance_dashboard']
  LOOP
    BEGIN
      EXECUTE format('DROP ROLE IF EXISTS %I', _role);
    EXCEPTION WHEN dependent_objects_still_exist THEN
      RAISE NOTICE 'role % kept: another database of this cluster still uses it', _role;
    END;
  END LOOP;
END
$$;

COMMIT;
