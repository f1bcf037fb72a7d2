-- Verify insurance:claimant_rls on pg
DO $$
BEGIN
  ASSERT (SELECT count(*) FROM pg_catalog.pg_policies
           WHERE schemaname = 'insurance' AND roles @> ARRAY['insurance_holder'::name]
             AND policyname IN ('authorized_claimants_select_holder', 'risk_items_select_holder',
                                'risk_items_update_holder', 'beneficiaries_select_holder',
                                'beneficiaries_insert_holder', 'beneficiaries_update_holder',
                                'beneficiaries_delete_holder')) = 7, 'holder policies missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger
                  WHERE tgname = 'beneficiaries_mirror_holder_claimants'
                    AND tgrelid = 'insurance.beneficiaries'::regclass), 'mirroring trigger missing';
END
$$;
