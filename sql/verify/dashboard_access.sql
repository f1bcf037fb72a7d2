-- Verify insurance:dashboard_access on pg
SELECT 'dashboard._emission_json(insurance.integration_emissions, insurance.risk_items)'::regprocedure,
       'dashboard._risk_item_context(bigint)'::regprocedure,
       'dashboard.emissions_by_risk_item(bigint)'::regprocedure,
       'dashboard.list_emissions(text[], text, text, timestamp with time zone, timestamp with time zone, bigint, integer)'::regprocedure,
       'dashboard.emission_detail(bigint)'::regprocedure,
       'dashboard._outbox_url(text)'::regprocedure,
       'dashboard.list_outbox(boolean, bigint, integer)'::regprocedure,
       'dashboard.list_audit(bigint, integer)'::regprocedure,
       'dashboard._actor()'::regprocedure,
       'dashboard.retry_emissions(bigint[], text)'::regprocedure,
       'dashboard.retry_outbox(bigint[])'::regprocedure,
       'dashboard.begin_beneficiaries_sync(bigint, uuid, text, integer)'::regprocedure,
       'dashboard.risk_item_emissions(bigint, uuid)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard._emission_json(insurance.integration_emissions, insurance.risk_items)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard._emission_json';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.emissions_by_risk_item(bigint)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.emissions_by_risk_item';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard._outbox_url(text)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard._outbox_url';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard._actor()', 'EXECUTE'), 'insurance_dashboard cannot call dashboard._actor';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.list_emissions(text[], text, text, timestamptz, timestamptz, bigint, integer)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.list_emissions';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.emission_detail(bigint)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.emission_detail';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.list_outbox(boolean, bigint, integer)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.list_outbox';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.list_audit(bigint, integer)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.list_audit';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.retry_emissions(bigint[], text)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.retry_emissions';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.retry_outbox(bigint[])', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.retry_outbox';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.begin_beneficiaries_sync(bigint, uuid, text, integer)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.begin_beneficiaries_sync';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.risk_item_emissions(bigint, uuid)', 'EXECUTE'), 'insurance_dashboard cannot call dashboard.risk_item_emissions';
  ASSERT (SELECT count(*) FROM pg_policies WHERE policyname IN ('integration_emissions_select_dashboard', 'risk_items_select_dashboard')) = 2, 'a policy is missing';
END
$$;
