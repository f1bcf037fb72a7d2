-- Revert insurance:outbox_requests from pg: back to its released version (v0.9.0 and v1.0.0 alike).
-- The released file creates its functions with CREATE FUNCTION: they are dropped first, in the
-- same transaction (the included file's BEGIN only warns inside it, its COMMIT ends both), then
-- it runs as it was.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;
DROP FUNCTION outbox.claim_batch(text, integer, integer);
DROP FUNCTION outbox._end_removed_endpoints(text, uuid, bigint[]);
DROP FUNCTION outbox.http_post_all(text[], jsonb[], jsonb[], timestamptz[]);
DROP FUNCTION outbox.http_post(text, jsonb, jsonb, timestamptz);
DROP FUNCTION outbox.is_final(integer);
DROP FUNCTION outbox.record_deliveries(text, jsonb, integer);
DROP FUNCTION outbox.release(text, bigint[]);
DROP FUNCTION outbox.list_requests(boolean, integer);
DROP FUNCTION outbox.retry_requests(text, bigint[], boolean);
\ir ../deploy/outbox_requests@v0.9.0.sql
