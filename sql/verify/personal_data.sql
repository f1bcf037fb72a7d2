-- Verify insurance:personal_data on pg
SELECT relation, column_name, json_path, category, subject, rule, note FROM insurance.personal_data WHERE false;
SELECT risk_item_id, at, reason FROM insurance.pseudonymized_items WHERE false;
DO $$
BEGIN
  ASSERT (SELECT count(*) FROM insurance.retention_rules) >= 8, 'retention rules missing';
  ASSERT EXISTS (SELECT FROM insurance.personal_data WHERE relation = 'insurance.beneficiaries' AND column_name = 'email'),
         'the map does not name beneficiaries.email';
END
$$;
