-- Verify insurance:risk_items_insured_email_idx on pg: the index exists and is valid
SELECT 1 / indisvalid::int FROM pg_catalog.pg_index WHERE indexrelid = 'insurance.risk_items_insured_email_idx'::regclass;
