-- Revert insurance:email_address from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

ALTER TABLE insurance.authorized_claimants DROP CONSTRAINT authorized_claimants_email_check,
  ADD CONSTRAINT authorized_claimants_email_check CHECK (email = lower(email) AND email ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$');
ALTER TABLE insurance.beneficiaries DROP CONSTRAINT beneficiaries_email_check,
  ADD CONSTRAINT beneficiaries_email_check CHECK (email = lower(email) AND email ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$');
ALTER TABLE insurance.dashboard_users ALTER COLUMN email TYPE text,
  ADD CONSTRAINT dashboard_users_email_check CHECK (email = lower(email) AND email ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$');
DROP DOMAIN insurance.email;

COMMIT;
