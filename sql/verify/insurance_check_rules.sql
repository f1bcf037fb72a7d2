-- Verify insurance:insurance_check_rules on pg
BEGIN;

SELECT 'insurance.check_rules()'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_anon', 'insurance.check_rules()', 'EXECUTE'),
    'insurance_anon cannot call insurance.check_rules';
  ASSERT obj_description((SELECT oid FROM pg_constraint WHERE conname = 'risk_items_policy_uid_check'), 'pg_constraint')
    IS NOT NULL, 'risk_items_policy_uid_check has no sentence';
END
$$;

ROLLBACK;
