-- Verify insurance:channel_rls on pg
DO $$
BEGIN
  ASSERT (SELECT count(*) FROM pg_catalog.pg_policies
           WHERE schemaname = 'insurance'
             AND policyname IN ('risk_items_select_channel', 'risk_items_insert_channel',
                                'beneficiaries_select_channel', 'beneficiaries_insert_channel',
                                'channel_item_counts_select_channel', 'risk_item_documents_select_channel')) = 6,
         'the six channel policies are missing';
  ASSERT has_table_privilege('insurance_channel', 'insurance.risk_item_documents', 'SELECT'),
         'insurance_channel cannot read risk_item_documents';
END
$$;
