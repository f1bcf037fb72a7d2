-- Deploy insurance:email_address to pg
-- One e-mail rule for the database: the DOMAIN insurance.email, used by every table that stores
-- an address (app/validation.py EMAIL is its Python copy for early answers;
-- tests/test_input_rules.py proves they agree).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- The one e-mail rule, on purpose a domain: changing it later is a new domain and a planned
-- column type change per table (squawk's ban-create-domain-with-constraint, ignored here).
CREATE DOMAIN insurance.email AS text
  -- squawk-ignore ban-create-domain-with-constraint -- the one e-mail rule (above)
  CHECK (VALUE = pg_catalog.lower(VALUE) AND pg_catalog.length(VALUE) <= 254
         AND VALUE ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$');
COMMENT ON DOMAIN insurance.email IS 'An e-mail address as stored: lower case, x@y.z, at most 254 characters';

COMMIT;
