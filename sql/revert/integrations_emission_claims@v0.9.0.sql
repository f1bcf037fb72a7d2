-- Revert insurance:integrations_emission_claims from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION integrations._begin_one(jsonb,text,integer);
DROP FUNCTION integrations.begin_batch(jsonb,text,integer);
DROP FUNCTION integrations.emission_json(insurance.integration_emissions);

COMMIT;
