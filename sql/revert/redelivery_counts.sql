-- Revert insurance:redelivery_counts from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP TABLE webhooks.redelivery_counts;

COMMIT;
