-- Verify insurance:gateway_webhook_deliveries on pg
SELECT 'gateway.list_webhook_deliveries(integer,integer,integer)'::regprocedure,
       'gateway.page_webhook_deliveries(integer,integer,bigint)'::regprocedure,
       'gateway.redeliver_webhook(integer,bigint,integer)'::regprocedure,
       'gateway.redeliver_webhook(integer,bigint)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_app', 'gateway.list_webhook_deliveries(integer,integer,integer)', 'EXECUTE'), 'insurance_app cannot call gateway.list_webhook_deliveries';
  ASSERT has_function_privilege('insurance_channel', 'gateway.list_webhook_deliveries(integer,integer,integer)', 'EXECUTE'), 'insurance_channel cannot call gateway.list_webhook_deliveries';
  ASSERT has_function_privilege('insurance_app', 'gateway.page_webhook_deliveries(integer,integer,bigint)', 'EXECUTE'), 'insurance_app cannot call gateway.page_webhook_deliveries';
  ASSERT has_function_privilege('insurance_channel', 'gateway.page_webhook_deliveries(integer,integer,bigint)', 'EXECUTE'), 'insurance_channel cannot call gateway.page_webhook_deliveries';
  ASSERT has_function_privilege('insurance_app', 'gateway.redeliver_webhook(integer,bigint,integer)', 'EXECUTE'), 'insurance_app cannot call gateway.redeliver_webhook';
  ASSERT has_function_privilege('insurance_channel', 'gateway.redeliver_webhook(integer,bigint,integer)', 'EXECUTE'), 'insurance_channel cannot call gateway.redeliver_webhook';
  ASSERT has_function_privilege('insurance_channel', 'gateway.redeliver_webhook(integer,bigint)', 'EXECUTE'), 'insurance_channel cannot call gateway.redeliver_webhook(integer,bigint)';
END
$$;
