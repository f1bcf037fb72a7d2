-- Revert insurance:outbox_delivered_bodies from pg: back to its v1.1.0 version. Its trigger and
-- function are dropped and the released script runs as it was, in the same transaction (its BEGIN
-- only warns that one is open; its COMMIT ends both).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- SHARE ROW EXCLUSIVE on http_requests: a catalog change only, held for a moment
DROP TRIGGER http_requests_drop_delivered_body ON outbox.http_requests;
DROP FUNCTION outbox._drop_delivered_body();

\ir ../deploy/outbox_delivered_bodies@v1.1.0.sql
