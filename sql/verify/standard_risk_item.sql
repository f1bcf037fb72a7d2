-- Verify insurance:standard_risk_item on pg
SELECT 'integrations.standard_risk_item(bigint)'::regprocedure, 'integrations.standard_risk_items(bigint[])'::regprocedure;
DO $$ BEGIN
  ASSERT has_function_privilege('insurance_service', 'integrations.standard_risk_item(bigint)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'integrations.standard_risk_items(bigint[])', 'EXECUTE');
  ASSERT (SELECT count(*) FROM pg_policies
           WHERE schemaname = 'insurance'
             AND policyname IN ('risk_items_select_service', 'beneficiaries_select_service',
                                'authorized_claimants_select_service', 'risk_item_documents_select_service')) = 4;
  ASSERT has_table_privilege('insurance_service', 'insurance.risk_item_documents', 'SELECT');
END $$;
