-- Revert insurance:postsales_otp from pg
BEGIN;
DROP TABLE insurance.postsales_otp;
COMMIT;
