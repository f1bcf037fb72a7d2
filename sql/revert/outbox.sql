-- Revert insurance:outbox from pg
BEGIN;
DROP TABLE outbox.http_requests;
COMMIT;
