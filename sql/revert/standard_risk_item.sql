-- Revert insurance:standard_risk_item from pg
BEGIN;
DROP FUNCTION integrations.standard_risk_item(bigint);
DROP FUNCTION integrations.standard_risk_items(bigint[]);
REVOKE SELECT ON insurance.risk_item_documents FROM insurance_service;
DROP POLICY risk_item_documents_select_service ON insurance.risk_item_documents;
DROP POLICY authorized_claimants_select_service ON insurance.authorized_claimants;
DROP POLICY beneficiaries_select_service ON insurance.beneficiaries;
DROP POLICY risk_items_select_service ON insurance.risk_items;
COMMIT;
