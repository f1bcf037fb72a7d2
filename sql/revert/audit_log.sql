-- Revert insurance:audit_log from pg
BEGIN;
DROP FUNCTION insurance.record_audit(text, text, jsonb, text, jsonb);
DROP TABLE insurance.audit_log;

COMMIT;
