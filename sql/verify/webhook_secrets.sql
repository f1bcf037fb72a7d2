-- Verify insurance:webhook_secrets on pg
SELECT channel_id, salt, previous_salt, rotated_at, created_at FROM webhooks.secrets WHERE false;
DO $$
BEGIN
  ASSERT NOT has_table_privilege('insurance_service', 'webhooks.secrets', 'SELECT'), 'the salts are readable';
END
$$;
