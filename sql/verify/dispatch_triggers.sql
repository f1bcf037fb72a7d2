-- Verify insurance:dispatch_triggers on pg
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'risk_items_dispatch');
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'orders_dispatch');
END
$$;
