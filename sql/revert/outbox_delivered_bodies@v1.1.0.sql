-- Revert insurance:outbox_delivered_bodies from pg
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL ROLE insurance_owner;

DROP TRIGGER http_requests_drop_delivered_body ON outbox.http_requests;
DROP FUNCTION outbox._drop_delivered_body();

COMMIT;
