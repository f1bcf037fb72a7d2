-- Revert insurance:outbox_requests from pg
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP FUNCTION outbox.retry_requests(text, bigint[], boolean);
DROP FUNCTION outbox.list_requests(boolean, integer);
DROP FUNCTION outbox.release(text, bigint[]);
DROP FUNCTION outbox.record_deliveries(text, jsonb, integer);
DROP FUNCTION outbox.is_final(integer);
DROP FUNCTION outbox.claim_batch(text, integer, integer);
DROP FUNCTION outbox.http_post(text, jsonb, jsonb, timestamptz);
DROP FUNCTION outbox.http_post_all(text[], jsonb[], jsonb[], timestamptz[]);
COMMIT;
