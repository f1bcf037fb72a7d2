-- Verify insurance:risk_items_holder_select_policy on pg
DO $$
BEGIN
  ASSERT (SELECT qual LIKE '%= ANY (ARRAY(%' FROM pg_catalog.pg_policies
           WHERE schemaname = 'insurance' AND tablename = 'risk_items' AND policyname = 'risk_items_select_holder'),
         'risk_items_select_holder does not read the claimant''s item ids as one array';
END
$$;
