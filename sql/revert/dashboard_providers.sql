-- Revert insurance:dashboard_providers from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.resume_provider(text, text);
DROP FUNCTION dashboard.pause_provider(text, timestamptz, text);
DROP FUNCTION dashboard.providers_health(integer);
DROP FUNCTION dashboard._p95_ms(integer[]);

COMMIT;
