-- Revert insurance:outbox from pg
BEGIN;
DROP TABLE outbox.batch_routes;
DROP TABLE outbox.http_requests;
DROP FUNCTION outbox._mark_batch();
COMMIT;
