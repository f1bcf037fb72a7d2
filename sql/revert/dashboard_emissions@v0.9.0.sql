-- Revert insurance:dashboard_emissions from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.risk_item_emissions(bigint, uuid);
DROP FUNCTION dashboard.retry_emissions(bigint[],text);
DROP FUNCTION dashboard.emission_detail(bigint);
DROP FUNCTION dashboard.list_emissions(text[],text,text,timestamp with time zone,timestamp with time zone,bigint,integer);
DROP FUNCTION dashboard._risk_item_context(bigint);
DROP FUNCTION dashboard._emission_json(insurance.integration_emissions,insurance.risk_items);

COMMIT;
