-- Verify insurance:audit_log_targets_idx on pg: the index exists and is valid
SELECT 1 / indisvalid::int FROM pg_catalog.pg_index WHERE indexrelid = 'insurance.audit_log_targets_idx'::regclass;
