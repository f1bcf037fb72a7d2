-- Revert insurance:gateway_webhook_deliveries from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION gateway.redeliver_webhook(integer,bigint);
DROP FUNCTION gateway.page_webhook_deliveries(integer,integer,bigint);
DROP FUNCTION gateway.list_webhook_deliveries(integer,integer,integer);

COMMIT;
