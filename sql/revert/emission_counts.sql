-- Revert insurance:emission_counts from pg
BEGIN;
DROP FUNCTION insurance.fold_emission_counts();
DROP TRIGGER integration_emissions_count_delete ON insurance.integration_emissions;
DROP TRIGGER integration_emissions_count_update ON insurance.integration_emissions;
DROP TRIGGER integration_emissions_count_insert ON insurance.integration_emissions;
DROP FUNCTION insurance._count_emissions();
DROP TABLE insurance.emission_count_deltas;
DROP TABLE insurance.emission_counts;
COMMIT;
