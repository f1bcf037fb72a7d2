-- Verify insurance:gateway_risk_items on pg
SELECT id, uid, policy_uid, document FROM gateway.risk_item_documents WHERE false;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_channel', 'gateway.list_risk_items(integer, integer, integer, text)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_channel', 'gateway.page_risk_items(integer, integer, bigint, text)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_channel', 'gateway.get_risk_item(integer, uuid)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_channel', 'gateway.create_risk_item(integer, jsonb)', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_holder', 'gateway.create_risk_item(integer, jsonb)', 'EXECUTE'),
         'holders may not create gateway risk items';
  -- The rules come from the table: a name of 201 characters breaks beneficiaries_name_check.
  ASSERT gateway._broken_rules('insurance.beneficiaries', jsonb_build_object('name', repeat('x', 201)))
         -> 0 ->> 'column' = 'name';
  ASSERT gateway._shape_problems('{"a": 1}', '', '{"b": "string"}', '{b}') = 
         '[{"field": "a", "message": "unknown field"}, {"field": "b", "message": "is required"}]';
END
$$;
