-- Revert insurance:entry_point_roles from pg
BEGIN;
DROP FUNCTION insurance.require_role(text[]);
COMMIT;
