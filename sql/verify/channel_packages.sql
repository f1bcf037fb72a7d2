-- Verify insurance:channel_packages on pg
SELECT channel_id, package_id FROM insurance.channel_packages WHERE false;
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_trigger WHERE tgname = 'risk_items_channel_lane'
                   AND tgrelid = 'insurance.risk_items'::regclass);
  ASSERT 'integration' = ANY (insurance.system_metadata_keys());
END
$$;
