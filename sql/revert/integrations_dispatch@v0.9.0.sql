-- Revert insurance:integrations_dispatch from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP TRIGGER orders_dispatch ON insurance.orders;
DROP TRIGGER risk_items_dispatch ON insurance.risk_items;
DROP FUNCTION integrations.enqueue_order_dispatch();
DROP FUNCTION integrations.enqueue_risk_item_dispatch();

COMMIT;
