-- Verify insurance:admin_commands on pg
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_owner', 'admin.create_package(text, text, text, text, text, jsonb)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_owner', 'admin.create_order(text, bigint, uuid, text, jsonb)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_owner', 'admin.delete_integration(text, text)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_app', 'admin.create_channel(text, text, text[], bytea, jsonb, jsonb)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_dashboard', 'admin.list_integrations()', 'EXECUTE');
END
$$;
