-- Verify insurance:integrations_dispatch on pg
SELECT 'integrations.enqueue_risk_item_dispatch()'::regprocedure,
       'integrations.enqueue_order_dispatch()'::regprocedure;
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'risk_items_dispatch' AND tgrelid = 'insurance.risk_items'::regclass), 'trigger risk_items_dispatch missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'orders_dispatch' AND tgrelid = 'insurance.orders'::regclass), 'trigger orders_dispatch missing';
END
$$;
