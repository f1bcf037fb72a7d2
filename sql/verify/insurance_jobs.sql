-- Verify insurance:insurance_jobs on pg
SELECT job, last_run_at, last_result FROM insurance.job_runs WHERE false;
SELECT 'insurance.schedule_job(text, text, text, text)'::regprocedure, 'insurance.unschedule_job(text)'::regprocedure,
       'insurance._cron_connection()'::regprocedure;
