-- Revert insurance:emission_claims from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION integrations.begin_post_sales_emission(bigint, text, integer);
DROP FUNCTION integrations.begin_batch(jsonb, text, integer);
DROP FUNCTION integrations._begin_one(jsonb, text, integer);
DROP FUNCTION integrations.begin_emission_retry(bigint, text, integer);
DROP FUNCTION integrations.begin_order_emission(bigint, text, integer);
DROP FUNCTION integrations.begin_emission(bigint, text, text, text, integer);
DROP FUNCTION integrations.emission_json(insurance.integration_emissions);
DROP POLICY integration_emissions_select_service ON insurance.integration_emissions;
DROP TABLE insurance.emission_claims;

COMMIT;
