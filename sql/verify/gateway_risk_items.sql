-- Verify insurance:gateway_risk_items on pg
SELECT 'gateway.list_risk_items(integer, integer, integer, text)'::regprocedure,
       'gateway.page_risk_items(integer, integer, bigint, text)'::regprocedure,
       'gateway.get_risk_item(integer, bigint, uuid)'::regprocedure,
       'gateway._broken_rules(regclass, jsonb)'::regprocedure,
       'gateway._shape_problems(jsonb, text, jsonb, text[])'::regprocedure,
       'gateway.create_risk_item(integer, jsonb)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_channel', 'gateway._broken_rules(regclass, jsonb)', 'EXECUTE'), 'insurance_channel cannot call gateway._broken_rules';
  ASSERT has_function_privilege('insurance_channel', 'gateway._shape_problems(jsonb, text, jsonb, text[])', 'EXECUTE'), 'insurance_channel cannot call gateway._shape_problems';
  ASSERT has_function_privilege('insurance_channel', 'gateway.list_risk_items(integer, integer, integer, text)', 'EXECUTE'), 'insurance_channel cannot call gateway.list_risk_items';
  ASSERT has_function_privilege('insurance_channel', 'gateway.page_risk_items(integer, integer, bigint, text)', 'EXECUTE'), 'insurance_channel cannot call gateway.page_risk_items';
  ASSERT has_function_privilege('insurance_channel', 'gateway.get_risk_item(integer, bigint, uuid)', 'EXECUTE'), 'insurance_channel cannot call gateway.get_risk_item';
  ASSERT has_function_privilege('insurance_channel', 'gateway.create_risk_item(integer, jsonb)', 'EXECUTE'), 'insurance_channel cannot call gateway.create_risk_item';
END
$$;
-- The rate limit's parameter is named _rate_limit.
SELECT 1 / (proargnames[1] = '_rate_limit')::int FROM pg_catalog.pg_proc
 WHERE oid = 'gateway.create_risk_item(integer,jsonb)'::regprocedure;
