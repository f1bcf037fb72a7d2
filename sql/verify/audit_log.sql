-- Verify insurance:audit_log on pg
SELECT id, at, actor, on_behalf_of, via, action, targets, result, details FROM insurance.audit_log WHERE false;
DO $$
BEGIN
  ASSERT has_table_privilege('insurance_dashboard', 'insurance.audit_log', 'SELECT');
  ASSERT NOT has_table_privilege('insurance_dashboard', 'insurance.audit_log', 'UPDATE');
  ASSERT NOT has_function_privilege('insurance_app',
    'insurance.record_audit(text, text, jsonb, text, jsonb)', 'EXECUTE');
END
$$;
SELECT 'insurance.audit_log_at_idx'::regclass,
       'insurance.audit_log_id_desc_idx'::regclass,
       'insurance.record_audit(text,text,jsonb,text,jsonb)'::regprocedure;
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.audit_log' AND policyname = 'audit_log_select_dashboard'), 'policy audit_log_select_dashboard missing';
END
$$;
