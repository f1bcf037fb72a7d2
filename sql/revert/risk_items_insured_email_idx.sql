-- Revert insurance:risk_items_insured_email_idx from pg (non-transactional: DROP INDEX CONCURRENTLY)
SET lock_timeout = '5s';
DROP INDEX CONCURRENTLY IF EXISTS insurance.risk_items_insured_email_idx;
