-- Revert insurance:outbox_functions from pg
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP FUNCTION outbox.release(text, bigint[]);
DROP FUNCTION outbox.record_deliveries(text, jsonb);
DROP FUNCTION outbox.is_final(integer);
DROP FUNCTION outbox.claim_batch(text, integer, integer);
DROP FUNCTION outbox.http_post(text, jsonb, jsonb, timestamptz);
DROP INDEX outbox.http_requests_pending_emission_idx;
DELETE FROM outbox.http_requests WHERE url !~ '^https?://';
ALTER TABLE outbox.http_requests DROP CONSTRAINT http_requests_url_check;
ALTER TABLE outbox.http_requests ADD CONSTRAINT http_requests_url_check CHECK (url ~ '^https?://');
COMMIT;
