-- Verify insurance:beneficiaries on pg
SELECT id, risk_item_id, name, email, document, relationship, is_holder, share, created_at
  FROM insurance.beneficiaries WHERE false;
SELECT 'insurance.check_beneficiary_shares()'::regprocedure;
SELECT 'insurance.beneficiary_json(insurance.beneficiaries)'::regprocedure;
