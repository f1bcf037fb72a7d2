-- Revert insurance:channel_rls from pg
BEGIN;
DROP POLICY channel_item_counts_select_channel ON insurance.channel_item_counts;
REVOKE SELECT ON insurance.channel_item_counts FROM insurance_channel;
DROP POLICY risk_item_documents_select_channel ON insurance.risk_item_documents;
REVOKE SELECT ON insurance.risk_item_documents FROM insurance_channel;
DROP POLICY beneficiaries_insert_channel ON insurance.beneficiaries;
DROP POLICY beneficiaries_select_channel ON insurance.beneficiaries;
DROP POLICY risk_items_insert_channel ON insurance.risk_items;
DROP POLICY risk_items_select_channel ON insurance.risk_items;
COMMIT;
