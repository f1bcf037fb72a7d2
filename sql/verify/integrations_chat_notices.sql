-- Verify insurance:integrations_chat_notices on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service',
    'integrations.chat_message(text, text, uuid, text, text, text, integer, integer, timestamptz)', 'EXECUTE');
END
$$;
