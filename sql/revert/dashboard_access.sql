-- Revert insurance:dashboard_access from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.risk_item_emissions(bigint, uuid);
DROP FUNCTION dashboard.begin_beneficiaries_sync(bigint, uuid, text, integer);
DROP FUNCTION dashboard.retry_outbox(bigint[]);
DROP FUNCTION dashboard.retry_emissions(bigint[], text);
DROP FUNCTION dashboard._actor();
DROP INDEX insurance.audit_log_id_desc_idx;
DROP FUNCTION dashboard.list_audit(bigint, integer);
DROP FUNCTION dashboard.list_outbox(boolean, bigint, integer);
DROP FUNCTION dashboard._outbox_url(text);
DROP FUNCTION dashboard.emission_detail(bigint);
DROP FUNCTION dashboard.list_emissions(text[], text, text, timestamp with time zone, timestamp with time zone, bigint, integer);
DROP INDEX insurance.integration_emissions_event_id_idx;
REVOKE USAGE ON SCHEMA outbox FROM insurance_dashboard;
DROP FUNCTION dashboard.emissions_by_risk_item(bigint);
DROP FUNCTION dashboard._risk_item_context(bigint);
DROP FUNCTION dashboard._emission_json(insurance.integration_emissions, insurance.risk_items);
DROP INDEX insurance.integration_emissions_status_id_idx;
DROP POLICY risk_items_select_dashboard ON insurance.risk_items;
DROP POLICY integration_emissions_select_dashboard ON insurance.integration_emissions;

COMMIT;
