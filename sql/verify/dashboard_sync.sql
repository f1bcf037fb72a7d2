-- Verify insurance:dashboard_sync on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.begin_beneficiaries_sync(bigint, uuid, text, integer)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_service', 'dashboard.begin_beneficiaries_sync(bigint, uuid, text, integer)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_holder', 'dashboard.begin_beneficiaries_sync(bigint, uuid, text, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.risk_item_emissions(bigint, uuid)', 'EXECUTE');
END
$$;
