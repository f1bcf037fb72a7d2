-- Revert insurance:risk_items from pg
BEGIN;
DROP TABLE insurance.risk_items;
DROP TABLE insurance.channel_item_counts;
DROP FUNCTION insurance.touch_updated_at();
DROP FUNCTION insurance._count_channel_items();
DROP FUNCTION insurance._move_channel_item();

COMMIT;
