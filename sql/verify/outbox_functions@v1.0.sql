-- Verify insurance:outbox_functions on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'outbox.http_post(text, jsonb, jsonb, timestamptz)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'outbox.claim_batch(text, integer, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'outbox.record_deliveries(text, jsonb)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'outbox.release(text, bigint[])', 'EXECUTE');
END
$$;
