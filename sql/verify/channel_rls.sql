-- Verify insurance:channel_rls on pg
DO $$
BEGIN
  ASSERT (SELECT count(*) FROM pg_catalog.pg_policies
           WHERE schemaname = 'insurance'
             AND policyname IN ('risk_items_select_channel', 'risk_items_insert_channel',
                                'beneficiaries_select_channel', 'beneficiaries_insert_channel',
                                'channel_item_counts_select_channel')) = 5,
         'the five channel policies are missing';
END
$$;
