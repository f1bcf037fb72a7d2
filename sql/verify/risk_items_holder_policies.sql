-- Verify insurance:risk_items_holder_policies on pg
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.risk_items' AND policyname = 'risk_items_select_holder'), 'policy risk_items_select_holder missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.risk_items' AND policyname = 'risk_items_update_holder'), 'policy risk_items_update_holder missing';
END
$$;
