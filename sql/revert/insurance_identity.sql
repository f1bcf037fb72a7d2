-- Revert insurance:insurance_identity from pg
BEGIN;
DROP FUNCTION insurance.require_role(text[]);
DROP FUNCTION insurance.claim(text);
DROP FUNCTION insurance.claims();
COMMIT;
