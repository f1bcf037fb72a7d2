-- Revert insurance:outbox_batch_routes from pg
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP TRIGGER http_requests_mark_batch ON outbox.http_requests;
DROP FUNCTION outbox._mark_batch();
DROP TABLE outbox.batch_routes;
COMMIT;
