-- Revert insurance:postsales_risk_items from pg: back to the version released in v1.0.0. Its
-- deploy script as released creates its functions without OR REPLACE: they are dropped first,
-- in the transaction that the included script's COMMIT ends (its BEGIN only warns that one is
-- in progress), so that no caller ever finds them missing.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;
DROP FUNCTION postsales.risk_item_json(bigint), postsales.visible_item(bigint, uuid),
  postsales.raise_unprocessable(text, text, jsonb), postsales.beneficiary_fields(jsonb, boolean),
  postsales.my_risk_items(), postsales.risk_item(bigint, uuid), postsales.update_risk_item(bigint, uuid, jsonb),
  postsales.risk_item_beneficiaries(bigint, uuid), postsales.add_beneficiary(bigint, uuid, jsonb),
  postsales.update_beneficiary(bigint, uuid, bigint, jsonb), postsales.remove_beneficiary(bigint, uuid, bigint),
  postsales.risk_item_variants(bigint, uuid), postsales.begin_emission(bigint, uuid, text, integer);
\ir ../deploy/postsales_risk_items@v0.9.0.sql
