-- Verify insurance:risk_items on pg
SELECT id, uid, package_id, channel_id, policy_uid, status, variant, insured_subject, metadata,
       created_at, updated_at
  FROM insurance.risk_items WHERE false;
SELECT 'insurance.touch_updated_at()'::regprocedure;
SELECT channel_id, count FROM insurance.channel_item_counts WHERE false;
SELECT 'insurance._count_channel_items()'::regprocedure, 'insurance._move_channel_item()'::regprocedure;
