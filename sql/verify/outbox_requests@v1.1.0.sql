-- Verify insurance:outbox_requests on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'outbox.http_post(text, jsonb, jsonb, timestamptz)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'outbox.http_post_all(text[], jsonb[], jsonb[], timestamptz[])', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'outbox.claim_batch(text, integer, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'outbox.is_final(integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'outbox.record_deliveries(text, jsonb, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'outbox.release(text, bigint[])', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_service', 'outbox.retry_requests(text, bigint[], boolean)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_app', 'outbox.list_requests(boolean, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'outbox._end_removed_endpoints(text, uuid, bigint[])', 'EXECUTE'),
         'the worker cannot end deliveries to removed endpoints';
  ASSERT NOT has_function_privilege('insurance_channel', 'outbox._end_removed_endpoints(text, uuid, bigint[])', 'EXECUTE'),
         'a channel may end deliveries';
  ASSERT (SELECT p.prosrc LIKE '%_end_removed_endpoints%' FROM pg_catalog.pg_proc p
           WHERE p.oid = 'outbox.claim_batch(text, integer, integer)'::regprocedure),
         'claim_batch does not end deliveries to removed endpoints';
END
$$;
