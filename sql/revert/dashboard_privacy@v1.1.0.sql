-- Revert insurance:dashboard_privacy from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.audit_about(text, integer);
DROP FUNCTION dashboard.record_view(text, bigint[], uuid[], text[]);
DROP FUNCTION dashboard.person_erase(text);
DROP FUNCTION dashboard.person_export(text);

COMMIT;
