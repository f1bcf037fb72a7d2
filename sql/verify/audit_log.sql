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
