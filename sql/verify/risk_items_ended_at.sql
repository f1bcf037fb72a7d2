-- Verify insurance:risk_items_ended_at on pg
SELECT ended_at FROM insurance.risk_items WHERE false;
