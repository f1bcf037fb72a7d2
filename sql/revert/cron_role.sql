-- Revert insurance:cron_role from pg
-- The role is shared by the cluster: only this database's grant goes (as roles.sql does).
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP FUNCTION insurance.schedule_job(text, text, text), insurance.unschedule_job(text),
              insurance._cron_connection();
RESET ROLE;
DO $$
BEGIN
  EXECUTE format('REVOKE ALL ON DATABASE %I FROM insurance_cron', current_database());
END
$$;
COMMIT;
