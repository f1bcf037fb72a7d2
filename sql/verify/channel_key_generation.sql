-- Verify insurance:channel_key_generation on pg
SELECT key_generation FROM insurance.channels WHERE false;
SELECT 'insurance._bump_key_generation()'::regprocedure;
