-- Verify insurance:authorized_claimants on pg
SELECT email, risk_item_id, created_at FROM insurance.authorized_claimants WHERE false;
SELECT 'insurance.authorized_claimants_risk_item_id_idx'::regclass;
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.authorized_claimants' AND policyname = 'authorized_claimants_select_service'), 'policy authorized_claimants_select_service missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.authorized_claimants' AND policyname = 'authorized_claimants_select_holder'), 'policy authorized_claimants_select_holder missing';
END
$$;
