-- Verify insurance:insurance_people on pg
SELECT 'insurance.policy_retention()'::regprocedure,
       'insurance.set_policy_retention(interval)'::regprocedure,
       'insurance.retained_until(insurance.risk_items)'::regprocedure,
       'insurance._person_export(text,text,text)'::regprocedure,
       'insurance._person_erase(text,text,text)'::regprocedure,
       'insurance.apply_personal_data_retention()'::regprocedure;
DO $$
BEGIN
  ASSERT has_function_privilege('insurance_cron', 'insurance.apply_personal_data_retention()', 'EXECUTE');
  ASSERT NOT has_function_privilege('insurance_app', 'insurance._person_erase(text,text,text)', 'EXECUTE');
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'risk_items_mark_ended'
                  AND tgrelid = 'insurance.risk_items'::regclass), 'trigger risk_items_mark_ended missing';
END
$$;
