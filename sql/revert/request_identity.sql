-- Revert insurance:request_identity from pg
BEGIN;
DROP FUNCTION insurance.require_role(text[]);
DROP FUNCTION insurance.claim(text);
DROP FUNCTION insurance.claims();
COMMIT;
