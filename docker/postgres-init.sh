#!/usr/bin/env bash
# First start of the container: the application database, the app's login with its password
# (the `roles` migration then finds it and only grants), and pg_cron in the cron database.
set -euo pipefail
psql -v ON_ERROR_STOP=1 -U postgres -d postgres -v app_password="${APP_DB_PASSWORD:?}" <<'SQL'
CREATE DATABASE insurance;
CREATE ROLE insurance_app LOGIN NOINHERIT PASSWORD :'app_password';
CREATE EXTENSION IF NOT EXISTS pg_cron;
SELECT cron.schedule('purge-cron-history', '17 3 * * *',
  $$DELETE FROM cron.job_run_details WHERE end_time < now() - interval '7 days'$$);
SQL
