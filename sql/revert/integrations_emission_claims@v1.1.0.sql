-- Revert insurance:integrations_emission_claims from pg: back to its v1.0.0 version (the
-- released file included as it is, after the reworked functions are dropped).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;
DROP FUNCTION integrations._begin_one(jsonb, text, integer);
DROP FUNCTION integrations.begin_batch(jsonb, text, integer);
DROP FUNCTION integrations.emission_json(insurance.integration_emissions);
-- The released file's own BEGIN only warns inside this transaction; its COMMIT ends it.
\ir ../deploy/integrations_emission_claims@v0.9.0.sql
