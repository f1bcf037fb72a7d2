-- Revert insurance:dispatch_triggers from pg
BEGIN;
DROP POLICY orders_select_service ON insurance.orders;
DROP TRIGGER orders_dispatch ON insurance.orders;
DROP FUNCTION integrations.enqueue_order_dispatch();
DROP TRIGGER risk_items_dispatch ON insurance.risk_items;
DROP FUNCTION integrations.enqueue_risk_item_dispatch();
COMMIT;
