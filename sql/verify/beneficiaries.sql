-- Verify insurance:beneficiaries on pg
SELECT id, risk_item_id, name, email, document, relationship, is_holder, share, created_at
  FROM insurance.beneficiaries WHERE false;
SELECT 'insurance.check_beneficiary_shares()'::regprocedure;
SELECT 'insurance.check_beneficiary_count()'::regprocedure;
SELECT 'insurance.beneficiary_json(insurance.beneficiaries)'::regprocedure;
SELECT 'insurance.beneficiaries_risk_item_id_idx'::regclass,
       'insurance.beneficiaries_holder_email_idx'::regclass,
       'insurance.beneficiaries_email_idx'::regclass,
       'insurance.check_beneficiary_shares()'::regprocedure,
       'insurance.check_beneficiary_count()'::regprocedure,
       'insurance.beneficiary_json(insurance.beneficiaries)'::regprocedure,
       'insurance.mirror_holder_claimants()'::regprocedure;
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'beneficiaries_check_shares' AND tgrelid = 'insurance.beneficiaries'::regclass), 'trigger beneficiaries_check_shares missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'beneficiaries_check_count' AND tgrelid = 'insurance.beneficiaries'::regclass), 'trigger beneficiaries_check_count missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'beneficiaries_mirror_holder_claimants' AND tgrelid = 'insurance.beneficiaries'::regclass), 'trigger beneficiaries_mirror_holder_claimants missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.beneficiaries' AND policyname = 'beneficiaries_select_service'), 'policy beneficiaries_select_service missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.beneficiaries' AND policyname = 'beneficiaries_select_holder'), 'policy beneficiaries_select_holder missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.beneficiaries' AND policyname = 'beneficiaries_insert_holder'), 'policy beneficiaries_insert_holder missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.beneficiaries' AND policyname = 'beneficiaries_update_holder'), 'policy beneficiaries_update_holder missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.beneficiaries' AND policyname = 'beneficiaries_delete_holder'), 'policy beneficiaries_delete_holder missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.beneficiaries' AND policyname = 'beneficiaries_select_channel'), 'policy beneficiaries_select_channel missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.beneficiaries' AND policyname = 'beneficiaries_insert_channel'), 'policy beneficiaries_insert_channel missing';
  ASSERT has_function_privilege('insurance_channel', 'insurance.beneficiary_json(insurance.beneficiaries)', 'EXECUTE'), 'insurance_channel cannot call insurance.beneficiary_json';
  ASSERT has_function_privilege('insurance_dashboard', 'insurance.beneficiary_json(insurance.beneficiaries)', 'EXECUTE'), 'insurance_dashboard cannot call insurance.beneficiary_json';
  ASSERT has_function_privilege('insurance_holder', 'insurance.beneficiary_json(insurance.beneficiaries)', 'EXECUTE'), 'insurance_holder cannot call insurance.beneficiary_json';
  ASSERT has_function_privilege('insurance_service', 'insurance.beneficiary_json(insurance.beneficiaries)', 'EXECUTE'), 'insurance_service cannot call insurance.beneficiary_json';
END
$$;
