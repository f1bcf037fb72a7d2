-- Revert insurance:audit_log_targets_idx from pg (non-transactional: DROP INDEX CONCURRENTLY)
SET lock_timeout = '5s';
DROP INDEX CONCURRENTLY IF EXISTS insurance.audit_log_targets_idx;
