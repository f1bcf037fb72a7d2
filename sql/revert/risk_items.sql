-- Revert insurance:risk_items from pg
BEGIN;
DROP TABLE insurance.risk_items;
DROP FUNCTION insurance.touch_updated_at();
COMMIT;
