-- Revert insurance:postsales_login from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION postsales.verify_otp(text, bytea, integer, inet, integer);
DROP FUNCTION postsales.request_otp(text, bytea, integer, inet, integer);
DROP FUNCTION postsales.risk_item_ids_by_holder_email(text);

COMMIT;
