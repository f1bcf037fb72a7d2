-- Verify insurance:dashboard_emissions on pg
SELECT 'dashboard._emission_json(insurance.integration_emissions,insurance.risk_items)'::regprocedure,
       'dashboard._risk_item_context(bigint)'::regprocedure,
       'dashboard.list_emissions(text[],text,text,timestamp with time zone,timestamp with time zone,bigint,integer)'::regprocedure,
       'dashboard.emission_detail(bigint)'::regprocedure,
       'dashboard.retry_emissions(bigint[],text)'::regprocedure,
       'dashboard.risk_item_emissions(bigint, uuid)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard._emission_json(insurance.integration_emissions,insurance.risk_items)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard._emission_json';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard._risk_item_context(bigint)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard._risk_item_context';
  ASSERT has_function_privilege('insurance_app', 'dashboard.list_emissions(text[],text,text,timestamp with time zone,timestamp with time zone,bigint,integer)', 'EXECUTE'), 'insurance_app cannot call dashboard.list_emissions';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.list_emissions(text[],text,text,timestamp with time zone,timestamp with time zone,bigint,integer)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.list_emissions';
  ASSERT has_function_privilege('insurance_app', 'dashboard.emission_detail(bigint)', 'EXECUTE'), 'insurance_app cannot call dashboard.emission_detail';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.emission_detail(bigint)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.emission_detail';
  ASSERT has_function_privilege('insurance_app', 'dashboard.retry_emissions(bigint[],text)', 'EXECUTE'), 'insurance_app cannot call dashboard.retry_emissions';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.retry_emissions(bigint[],text)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.retry_emissions';
  ASSERT has_function_privilege('insurance_app', 'dashboard.risk_item_emissions(bigint, uuid)', 'EXECUTE'), 'insurance_app cannot call dashboard.risk_item_emissions';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.risk_item_emissions(bigint, uuid)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.risk_item_emissions';
END
$$;
SELECT 'dashboard._emission_state(insurance.integration_emissions)'::regprocedure,
       'dashboard._in_progress_ids()'::regprocedure, 'dashboard._channel_json(uuid)'::regprocedure,
       'dashboard._emission_webhooks(bigint[])'::regprocedure, 'dashboard.emission_state(bigint)'::regprocedure,
       'dashboard.emission_counts()'::regprocedure,
       'dashboard.emissions_overview(text[],text,text,timestamp with time zone,timestamp with time zone,bigint,integer)'::regprocedure,
       'dashboard.retry_matching(text[],text,text,timestamp with time zone,timestamp with time zone,integer,boolean,text)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.emission_state(bigint)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.emission_state';
  ASSERT has_function_privilege('insurance_app', 'dashboard.emissions_overview(text[],text,text,timestamp with time zone,timestamp with time zone,bigint,integer)', 'EXECUTE'), 'insurance_app cannot call dashboard.emissions_overview';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.retry_matching(text[],text,text,timestamp with time zone,timestamp with time zone,integer,boolean,text)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.retry_matching';
  ASSERT NOT has_function_privilege('insurance_holder', 'dashboard.retry_matching(text[],text,text,timestamp with time zone,timestamp with time zone,integer,boolean,text)', 'EXECUTE'), 'insurance_holder may call dashboard.retry_matching';
END
$$;
