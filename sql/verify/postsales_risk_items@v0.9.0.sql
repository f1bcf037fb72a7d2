-- Verify insurance:postsales_risk_items on pg
SELECT 'postsales.risk_item_json(bigint)'::regprocedure,
       'postsales.visible_item(bigint, uuid)'::regprocedure,
       'postsales.raise_unprocessable(text, text, jsonb)'::regprocedure,
       'postsales.beneficiary_fields(jsonb, boolean)'::regprocedure,
       'postsales.my_risk_items()'::regprocedure,
       'postsales.risk_item(bigint, uuid)'::regprocedure,
       'postsales.update_risk_item(bigint, uuid, jsonb)'::regprocedure,
       'postsales.risk_item_beneficiaries(bigint, uuid)'::regprocedure,
       'postsales.add_beneficiary(bigint, uuid, jsonb)'::regprocedure,
       'postsales.update_beneficiary(bigint, uuid, bigint, jsonb)'::regprocedure,
       'postsales.remove_beneficiary(bigint, uuid, bigint)'::regprocedure,
       'postsales.risk_item_variants(bigint, uuid)'::regprocedure,
       'postsales.begin_emission(bigint, uuid, text, integer)'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_holder', 'postsales.risk_item_json(bigint)', 'EXECUTE'), 'insurance_holder cannot call postsales.risk_item_json';
  ASSERT has_function_privilege('insurance_holder', 'postsales.visible_item(bigint, uuid)', 'EXECUTE'), 'insurance_holder cannot call postsales.visible_item';
  ASSERT has_function_privilege('insurance_holder', 'postsales.raise_unprocessable(text, text, jsonb)', 'EXECUTE'), 'insurance_holder cannot call postsales.raise_unprocessable';
  ASSERT has_function_privilege('insurance_holder', 'postsales.beneficiary_fields(jsonb, boolean)', 'EXECUTE'), 'insurance_holder cannot call postsales.beneficiary_fields';
  ASSERT has_function_privilege('insurance_holder', 'postsales.my_risk_items()', 'EXECUTE'), 'insurance_holder cannot call postsales.my_risk_items';
  ASSERT has_function_privilege('insurance_holder', 'postsales.risk_item(bigint, uuid)', 'EXECUTE'), 'insurance_holder cannot call postsales.risk_item';
  ASSERT has_function_privilege('insurance_holder', 'postsales.update_risk_item(bigint, uuid, jsonb)', 'EXECUTE'), 'insurance_holder cannot call postsales.update_risk_item';
  ASSERT has_function_privilege('insurance_holder', 'postsales.risk_item_beneficiaries(bigint, uuid)', 'EXECUTE'), 'insurance_holder cannot call postsales.risk_item_beneficiaries';
  ASSERT has_function_privilege('insurance_holder', 'postsales.add_beneficiary(bigint, uuid, jsonb)', 'EXECUTE'), 'insurance_holder cannot call postsales.add_beneficiary';
  ASSERT has_function_privilege('insurance_holder', 'postsales.update_beneficiary(bigint, uuid, bigint, jsonb)', 'EXECUTE'), 'insurance_holder cannot call postsales.update_beneficiary';
  ASSERT has_function_privilege('insurance_holder', 'postsales.remove_beneficiary(bigint, uuid, bigint)', 'EXECUTE'), 'insurance_holder cannot call postsales.remove_beneficiary';
  ASSERT has_function_privilege('insurance_holder', 'postsales.risk_item_variants(bigint, uuid)', 'EXECUTE'), 'insurance_holder cannot call postsales.risk_item_variants';
  ASSERT has_function_privilege('insurance_holder', 'postsales.begin_emission(bigint, uuid, text, integer)', 'EXECUTE'), 'insurance_holder cannot call postsales.begin_emission';
END
$$;
