-- Revert insurance:gateway_risk_items from pg: back to the version released in v1.0.0, by running
-- its deploy script as released (CREATE OR REPLACE over this version). The functions whose
-- parameter this version renamed are dropped first (CREATE OR REPLACE keeps a parameter's name), in
-- the transaction that the included script's COMMIT ends (its BEGIN only warns that one is in
-- progress).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;
DROP FUNCTION gateway.list_risk_items(integer, integer, integer, text),
  gateway.page_risk_items(integer, integer, bigint, text),
  gateway.get_risk_item(integer, bigint, uuid),
  gateway.create_risk_item(integer, jsonb);
\ir ../deploy/gateway_risk_items@v1.0.0.sql
