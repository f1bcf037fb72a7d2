-- Verify insurance:orders on pg
SELECT id, risk_item_id, event, data, created_at FROM insurance.orders WHERE false;
