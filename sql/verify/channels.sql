-- Verify insurance:channels on pg
SELECT id, name, branches, api_key_hash, ia_keys, integration_payload, active, revoked_at, created_at
  FROM insurance.channels WHERE false;
