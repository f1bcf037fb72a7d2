-- Revert insurance:claimant_rls from pg
-- Mirrored claimant rows stay: they are data, and the previous state granted them too.
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP TRIGGER beneficiaries_mirror_holder_claimants ON insurance.beneficiaries;
DROP FUNCTION insurance.mirror_holder_claimants();
DROP INDEX insurance.beneficiaries_holder_email_idx;

REVOKE INSERT, UPDATE ON insurance.beneficiaries FROM insurance_holder;
GRANT INSERT, UPDATE ON insurance.beneficiaries TO insurance_holder;

DROP POLICY beneficiaries_delete_holder ON insurance.beneficiaries;
DROP POLICY beneficiaries_update_holder ON insurance.beneficiaries;
DROP POLICY beneficiaries_insert_holder ON insurance.beneficiaries;
DROP POLICY beneficiaries_select_holder ON insurance.beneficiaries;
REVOKE SELECT ON insurance.risk_item_documents FROM insurance_holder;
DROP POLICY risk_item_documents_select_holder ON insurance.risk_item_documents;
DROP POLICY risk_items_update_holder ON insurance.risk_items;
DROP POLICY risk_items_select_holder ON insurance.risk_items;
DROP POLICY authorized_claimants_select_holder ON insurance.authorized_claimants;

COMMIT;
