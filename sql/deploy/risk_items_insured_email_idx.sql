-- Deploy insurance:risk_items_insured_email_idx to pg (non-transactional: CREATE INDEX CONCURRENTLY)
-- The items whose insured is a person (insured_subject ->> 'email'): an export and an erasure
-- find them by index instead of reading every item (issue 39).
SET lock_timeout = '5s';
SET statement_timeout = '5min';
SET ROLE insurance_owner;
SELECT EXISTS (SELECT FROM pg_catalog.pg_index
                WHERE indexrelid = pg_catalog.to_regclass('insurance.risk_items_insured_email_idx')
                  AND NOT indisvalid) AS invalid_leftover \gset
\if :invalid_leftover
DROP INDEX CONCURRENTLY IF EXISTS insurance.risk_items_insured_email_idx;
\endif
CREATE INDEX CONCURRENTLY IF NOT EXISTS risk_items_insured_email_idx ON insurance.risk_items ((insured_subject ->> 'email'));
