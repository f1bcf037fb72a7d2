-- Revert insurance:holder_risk_items from pg
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP FUNCTION postsales.risk_item_variants(bigint);
DROP FUNCTION postsales.remove_beneficiary(bigint, bigint);
DROP FUNCTION postsales.update_beneficiary(bigint, bigint, jsonb);
DROP FUNCTION postsales.add_beneficiary(bigint, jsonb);
DROP FUNCTION postsales.beneficiary_fields(jsonb, boolean);
DROP FUNCTION postsales.risk_item_beneficiaries(bigint);
DROP FUNCTION postsales.update_risk_item(bigint, jsonb);
DROP FUNCTION postsales.risk_item(bigint);
DROP FUNCTION postsales.my_risk_items();
DROP FUNCTION postsales.unprocessable(text, text, jsonb);
DROP FUNCTION postsales.visible_item(bigint);
DROP FUNCTION postsales.risk_item_json(bigint);
DROP FUNCTION postsales.beneficiary_json(insurance.beneficiaries);
DROP TRIGGER beneficiaries_check_shares ON insurance.beneficiaries;
DROP FUNCTION insurance.check_beneficiary_shares();
COMMIT;
