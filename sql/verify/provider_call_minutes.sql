-- Verify insurance:provider_call_minutes on pg
SELECT minute, target, calls, failures, buckets, folded FROM insurance.provider_call_minutes WHERE false;
SELECT 'insurance.provider_call_buckets()'::regprocedure;
