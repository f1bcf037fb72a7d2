-- Revert insurance:insurance_jobs from pg
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP TABLE insurance.job_runs;
DROP FUNCTION insurance.schedule_job(text, text, text, text), insurance.unschedule_job(text),
              insurance._cron_connection();
RESET ROLE;
DROP EXTENSION IF EXISTS dblink;
COMMIT;
