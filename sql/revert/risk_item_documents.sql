-- Revert insurance:risk_item_documents from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP TRIGGER packages_documents_update ON insurance.packages;
DROP TRIGGER beneficiaries_documents_delete ON insurance.beneficiaries;
DROP TRIGGER beneficiaries_documents_update ON insurance.beneficiaries;
DROP TRIGGER beneficiaries_documents_insert ON insurance.beneficiaries;
DROP TRIGGER risk_items_documents_update ON insurance.risk_items;
DROP TRIGGER risk_items_documents_insert ON insurance.risk_items;
DROP FUNCTION insurance._risk_item_documents_of_packages();
DROP FUNCTION insurance._risk_item_documents_of_beneficiaries();
DROP FUNCTION insurance._risk_item_documents_of_items();
DROP FUNCTION insurance._refresh_risk_item_documents(bigint[], boolean);
DROP VIEW insurance.computed_risk_item_documents;
DROP TABLE insurance.risk_item_documents;

COMMIT;
