-- Revert insurance:postsales_risk_items from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION postsales.begin_emission(bigint, uuid, text, integer);
DROP FUNCTION postsales.risk_item_variants(bigint, uuid);
DROP FUNCTION postsales.remove_beneficiary(bigint, uuid, bigint);
DROP FUNCTION postsales.update_beneficiary(bigint, uuid, bigint, jsonb);
DROP FUNCTION postsales.add_beneficiary(bigint, uuid, jsonb);
DROP FUNCTION postsales.risk_item_beneficiaries(bigint, uuid);
DROP FUNCTION postsales.update_risk_item(bigint, uuid, jsonb);
DROP FUNCTION postsales.risk_item(bigint, uuid);
DROP FUNCTION postsales.my_risk_items();
DROP FUNCTION postsales.beneficiary_fields(jsonb, boolean);
DROP FUNCTION postsales.raise_unprocessable(text, text, jsonb);
DROP FUNCTION postsales.visible_item(bigint, uuid);
DROP FUNCTION postsales.risk_item_json(bigint);

COMMIT;
