-- Verify insurance:orders on pg
SELECT id, risk_item_id, event, data, created_at FROM insurance.orders WHERE false;
SELECT 'insurance.orders_risk_item_id_idx'::regclass;
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.orders' AND policyname = 'orders_select_service'), 'policy orders_select_service missing';
END
$$;
