-- Verify insurance:entry_point_guards on pg
DO $$
BEGIN
  ASSERT pg_get_functiondef('integrations.begin_batch(jsonb,text,integer)'::regprocedure) LIKE '%require_role(''insurance_service'')%';
  ASSERT pg_get_functiondef('integrations.begin_emission(bigint,text,text,text,integer)'::regprocedure) LIKE '%require_role(''insurance_service'')%';
  ASSERT pg_get_functiondef('integrations.begin_emission_retry(bigint,text,integer)'::regprocedure) LIKE '%require_role(''insurance_service'')%';
  ASSERT pg_get_functiondef('integrations.begin_order_emission(bigint,text,integer)'::regprocedure) LIKE '%require_role(''insurance_service'')%';
  ASSERT pg_get_functiondef('integrations.record_batch(jsonb,jsonb)'::regprocedure) LIKE '%require_role(''insurance_service'')%';
  ASSERT pg_get_functiondef('postsales.my_risk_items()'::regprocedure) LIKE '%require_role(''insurance_holder'')%';
  ASSERT pg_get_functiondef('postsales.begin_emission(bigint,uuid,text,integer)'::regprocedure) LIKE '%require_role(''insurance_holder'')%';
  ASSERT pg_get_functiondef('dashboard.emission_detail(bigint)'::regprocedure) LIKE '%require_role(''insurance_dashboard'')%';
  ASSERT pg_get_functiondef('dashboard.emissions_by_risk_item(bigint)'::regprocedure) LIKE '%require_role(''insurance_dashboard'')%';
  ASSERT pg_get_functiondef('dashboard.list_audit(bigint,integer)'::regprocedure) LIKE '%require_role(''insurance_dashboard'')%';
  ASSERT pg_get_functiondef('dashboard.list_emissions(text[],text,text,timestamp with time zone,timestamp with time zone,bigint,integer)'::regprocedure) LIKE '%require_role(''insurance_dashboard'')%';
  ASSERT pg_get_functiondef('dashboard.list_outbox(boolean,bigint,integer)'::regprocedure) LIKE '%require_role(''insurance_dashboard'')%';
  ASSERT pg_get_functiondef('dashboard.post_sales_target(bigint)'::regprocedure) LIKE '%require_role(''insurance_dashboard'')%';
  ASSERT pg_get_functiondef('dashboard.risk_item_emissions(bigint,uuid)'::regprocedure) LIKE '%require_role(''insurance_dashboard'')%';
  ASSERT NOT has_function_privilege('insurance_app', 'integrations._clean_text(text, integer)', 'EXECUTE');
END
$$;
