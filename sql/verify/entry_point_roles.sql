-- Verify insurance:entry_point_roles on pg
SELECT 'insurance.require_role(text[])'::regprocedure;
