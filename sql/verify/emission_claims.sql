-- Verify insurance:emission_claims on pg
SELECT risk_item_id, provider, event, claimed_by, lease_until FROM insurance.emission_claims WHERE false;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_service', 'integrations.begin_emission(bigint, text, text, text, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'integrations.begin_order_emission(bigint, text, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'integrations.begin_emission_retry(bigint, text, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_service', 'integrations.begin_batch(jsonb, text, integer)', 'EXECUTE');
  ASSERT has_function_privilege('insurance_holder', 'integrations.begin_post_sales_emission(bigint, text, integer)', 'EXECUTE');
  ASSERT pg_catalog.pg_get_functiondef('integrations.begin_post_sales_emission(bigint, text, integer)'::regprocedure)
         LIKE '%require_role%';
END
$$;
