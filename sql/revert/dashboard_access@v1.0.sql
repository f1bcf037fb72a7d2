-- Revert insurance:dashboard_access from pg
BEGIN;
DROP FUNCTION dashboard.post_sales_target(bigint);
DROP FUNCTION dashboard.list_emissions(text[], text, timestamptz, timestamptz, bigint, integer);
DROP FUNCTION dashboard.emissions_by_risk_item(bigint);
DROP FUNCTION dashboard._emission_json(insurance.integration_emissions);
DROP INDEX insurance.integration_emissions_status_id_idx;
DROP POLICY risk_items_select_dashboard ON insurance.risk_items;
DROP POLICY integration_emissions_select_dashboard ON insurance.integration_emissions;
COMMIT;
