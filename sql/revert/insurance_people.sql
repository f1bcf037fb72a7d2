-- Revert insurance:insurance_people from pg
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL ROLE insurance_owner;

DROP TRIGGER risk_items_mark_ended ON insurance.risk_items;
DROP FUNCTION insurance._mark_risk_item_ended();
DROP FUNCTION insurance.apply_personal_data_retention();
DROP FUNCTION insurance._person_erase(text, text, text);
DROP FUNCTION insurance._pseudonymize_items(bigint[], text);
DROP FUNCTION insurance._person_export(text, text, text);
DROP FUNCTION insurance._person_items(text);
DROP FUNCTION insurance.retained_until(insurance.risk_items);
DROP FUNCTION insurance.set_policy_retention(interval);
DROP FUNCTION insurance.policy_retention();

COMMIT;
