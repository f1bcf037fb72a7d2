-- Revert insurance:admin_people from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION admin.audit_about(text, integer);
DROP FUNCTION admin.person_erase(text, text);
DROP FUNCTION admin.person_export(text, text);

COMMIT;
