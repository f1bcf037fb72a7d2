-- Revert insurance:gateway_risk_items from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION gateway.create_risk_item(integer, jsonb);
DROP FUNCTION gateway._shape_problems(jsonb, text, jsonb, text[]);
DROP FUNCTION gateway._broken_rules(regclass, jsonb);
DROP FUNCTION gateway.get_risk_item(integer, bigint, uuid);
DROP FUNCTION gateway.page_risk_items(integer, integer, bigint, text);
DROP FUNCTION gateway.list_risk_items(integer, integer, integer, text);

COMMIT;
