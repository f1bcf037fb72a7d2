-- Verify insurance:claimant_rls on pg
DO $$
BEGIN
  ASSERT (SELECT count(*) FROM pg_catalog.pg_policies
           WHERE schemaname = 'insurance' AND roles @> ARRAY['insurance_holder'::name]
             AND policyname IN ('authorized_claimants_select_holder', 'risk_items_select_holder',
                                'risk_items_update_holder', 'beneficiaries_select_holder',
                                'beneficiaries_insert_holder', 'beneficiaries_update_holder',
                                'beneficiaries_delete_holder', 'risk_item_documents_select_holder')) = 8,
         'holder policies missing';
  ASSERT has_table_privilege('insurance_holder', 'insurance.risk_item_documents', 'SELECT'),
         'insurance_holder cannot read risk_item_documents';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger
                  WHERE tgname = 'beneficiaries_mirror_holder_claimants'
                    AND tgrelid = 'insurance.beneficiaries'::regclass), 'mirroring trigger missing';
END
$$;
