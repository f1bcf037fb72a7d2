-- Verify insurance:channels on pg
SELECT id, name, branches, api_key_hash, ia_keys, integration_payload, key_generation, active, revoked_at, created_at
  FROM insurance.channels WHERE false;
SELECT 'insurance._bump_key_generation()'::regprocedure;
SELECT 'insurance.channels_name_key'::regclass;
