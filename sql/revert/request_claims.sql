-- Revert insurance:request_claims from pg
BEGIN;
DROP FUNCTION insurance.claim(text);
DROP FUNCTION insurance.claims();
COMMIT;
