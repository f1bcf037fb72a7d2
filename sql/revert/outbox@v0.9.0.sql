-- Revert insurance:outbox from pg
BEGIN;
DROP TABLE outbox.batch_routes;
DROP TABLE outbox.http_requests;
DROP FUNCTION outbox._mark_batch();
DROP FUNCTION outbox._count_requests();
DROP FUNCTION outbox._fold_request_counts();
DROP TABLE outbox.request_counts;
DROP TABLE outbox.request_count_deltas;
COMMIT;
