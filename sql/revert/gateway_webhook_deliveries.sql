-- Revert insurance:gateway_webhook_deliveries from pg: back to the version released in v1.0.0, by
-- running its deploy script as released. The functions whose parameter this version renamed are
-- dropped first (CREATE OR REPLACE keeps a parameter's name), in the transaction that the included
-- script's COMMIT ends (its BEGIN only warns that one is in progress).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;
DROP FUNCTION gateway.list_webhook_deliveries(integer, integer, integer),
  gateway.page_webhook_deliveries(integer, integer, bigint),
  gateway.redeliver_webhook(integer, bigint, integer),
  gateway.redeliver_webhook(integer, bigint);
\ir ../deploy/gateway_webhook_deliveries@v1.0.0.sql
