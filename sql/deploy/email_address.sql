-- Deploy insurance:email_address to pg
-- requires: beneficiaries
-- requires: authorized_claimants
-- requires: dashboard_users
-- One e-mail rule for the database: the DOMAIN insurance.email (app/validation.py EMAIL is its
-- Python copy for early answers; tests/test_input_rules.py proves they agree).
BEGIN;
SET LOCAL ROLE insurance_owner;

-- email: an address as the tables store it: lower case, something@domain.tld, at most 254 characters.
CREATE DOMAIN insurance.email AS text
  CHECK (VALUE = pg_catalog.lower(VALUE) AND pg_catalog.length(VALUE) <= 254
         AND VALUE ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$');
COMMENT ON DOMAIN insurance.email IS 'An e-mail address as stored: lower case, x@y.z, at most 254 characters';

-- dashboard_users.email takes the type. beneficiaries.email and authorized_claimants.email stay
-- text, because RLS policies, a trigger and the gateway view depend on them (a type change would
-- drop and re-create each); their CHECK casts to the domain, which applies its rule (NULL passes).
ALTER TABLE insurance.dashboard_users DROP CONSTRAINT dashboard_users_email_check,
  ALTER COLUMN email TYPE insurance.email;
ALTER TABLE insurance.beneficiaries DROP CONSTRAINT beneficiaries_email_check,
  ADD CONSTRAINT beneficiaries_email_check CHECK (email::insurance.email = email);
ALTER TABLE insurance.authorized_claimants DROP CONSTRAINT authorized_claimants_email_check,
  ADD CONSTRAINT authorized_claimants_email_check CHECK (email::insurance.email = email);
COMMENT ON CONSTRAINT beneficiaries_email_check ON insurance.beneficiaries IS 'must be an e-mail address';

COMMIT;
