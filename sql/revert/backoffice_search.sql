-- Revert insurance:backoffice_search from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.list_packages();
DROP FUNCTION dashboard.search(text);
DROP INDEX insurance.beneficiaries_email_idx;
DROP INDEX insurance.integration_emissions_external_id_idx;
DROP INDEX insurance.risk_items_policy_uid_lower_idx;

COMMIT;
