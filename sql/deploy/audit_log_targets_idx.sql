-- Deploy insurance:audit_log_targets_idx to pg (non-transactional: CREATE INDEX CONCURRENTLY)
-- The audit rows naming a person (targets @> [email]): audit --about, the Privacy page and an
-- export find them by index instead of reading the whole log (issue 39).
SET lock_timeout = '5s';
SET statement_timeout = '5min';
SET ROLE insurance_owner;
SELECT EXISTS (SELECT FROM pg_catalog.pg_index
                WHERE indexrelid = pg_catalog.to_regclass('insurance.audit_log_targets_idx')
                  AND NOT indisvalid) AS invalid_leftover \gset
\if :invalid_leftover
DROP INDEX CONCURRENTLY IF EXISTS insurance.audit_log_targets_idx;
\endif
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_log_targets_idx ON insurance.audit_log USING gin (targets jsonb_path_ops);
