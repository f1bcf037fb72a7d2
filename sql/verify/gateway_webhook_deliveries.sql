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
DO $$
BEGIN
  ASSERT (SELECT p.prosrc LIKE '%WEBHOOK_ENDPOINT_REMOVED%' FROM pg_catalog.pg_proc p
           WHERE p.oid = 'gateway.redeliver_webhook(integer,bigint,integer)'::regprocedure),
         'gateway.redeliver_webhook redelivers to removed endpoints';
END
$$;
-- The rate limit's parameter is named _rate_limit.
SELECT 1 / (proargnames[1] = '_rate_limit')::int FROM pg_catalog.pg_proc
 WHERE oid = 'gateway.redeliver_webhook(integer,bigint,integer)'::regprocedure;
