-- Revert insurance:dashboard_emissions from pg: back to the version released in v1.0.0, by running
-- its deploy script as released (CREATE OR REPLACE over this version). The inlined helpers that
-- this version added are dropped first (_emission_json(e, r) reads them here; the released script
-- makes it anew), in the transaction that the included script's COMMIT ends (its BEGIN only warns
-- that one is in progress).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;
DROP FUNCTION dashboard._emission_json(insurance.integration_emissions, insurance.risk_items),
  dashboard._emission_json(insurance.integration_emissions, insurance.risk_items, text),
  dashboard._emission_state(insurance.integration_emissions, boolean),
  dashboard._emission_state(insurance.integration_emissions, boolean, boolean),
  dashboard._paused_providers();
\ir ../deploy/dashboard_emissions@v1.0.0.sql
