-- Verify insurance:outbox_call_minutes on pg
SELECT 'outbox.record_timed_deliveries(text,jsonb,integer)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'outbox.record_timed_deliveries(text,jsonb,integer)', 'EXECUTE'),
         'insurance_service cannot call outbox.record_timed_deliveries';
END
$$;
