-- Verify insurance:risk_items on pg
SELECT id, uid, package_id, channel_id, policy_uid, status, variant, insured_subject, metadata,
       created_at, updated_at
  FROM insurance.risk_items WHERE false;
SELECT 'insurance.touch_updated_at()'::regprocedure;
SELECT channel_id, count FROM insurance.channel_item_counts WHERE false;
SELECT 'insurance._count_channel_items()'::regprocedure, 'insurance._move_channel_item()'::regprocedure;
SELECT 'insurance.risk_items_channel_id_idx'::regclass,
       'insurance.risk_items_channel_policy_idx'::regclass,
       'insurance.risk_items_policy_uid_lower_idx'::regclass,
       'insurance.touch_updated_at()'::regprocedure,
       'insurance._count_channel_items()'::regprocedure,
       'insurance._move_channel_item()'::regprocedure;
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'risk_items_touch_updated_at' AND tgrelid = 'insurance.risk_items'::regclass), 'trigger risk_items_touch_updated_at missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'risk_items_count_insert' AND tgrelid = 'insurance.risk_items'::regclass), 'trigger risk_items_count_insert missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'risk_items_count_delete' AND tgrelid = 'insurance.risk_items'::regclass), 'trigger risk_items_count_delete missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'risk_items_count_move' AND tgrelid = 'insurance.risk_items'::regclass), 'trigger risk_items_count_move missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.risk_items' AND policyname = 'risk_items_select_service'), 'policy risk_items_select_service missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.risk_items' AND policyname = 'risk_items_update_service'), 'policy risk_items_update_service missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.risk_items' AND policyname = 'risk_items_select_channel'), 'policy risk_items_select_channel missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.risk_items' AND policyname = 'risk_items_insert_channel'), 'policy risk_items_insert_channel missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.channel_item_counts' AND policyname = 'channel_item_counts_select_channel'), 'policy channel_item_counts_select_channel missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.risk_items' AND policyname = 'risk_items_select_dashboard'), 'policy risk_items_select_dashboard missing';
END
$$;
