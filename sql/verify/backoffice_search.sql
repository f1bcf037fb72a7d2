-- Verify insurance:backoffice_search on pg
SELECT 'dashboard.search(text)'::regprocedure,
       'dashboard.list_packages()'::regprocedure,
       'insurance.risk_items_policy_uid_lower_idx'::regclass,
       'insurance.integration_emissions_external_id_idx'::regclass,
       'insurance.beneficiaries_email_idx'::regclass;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.search(text)', 'EXECUTE'),
    'insurance_dashboard cannot call dashboard.search';
  ASSERT has_function_privilege('insurance_dashboard', 'dashboard.list_packages()', 'EXECUTE'),
    'insurance_dashboard cannot call dashboard.list_packages';
  ASSERT NOT has_function_privilege('insurance_holder', 'dashboard.search(text)', 'EXECUTE'),
    'insurance_holder may call dashboard.search';
END
$$;
