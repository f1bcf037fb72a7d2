-- Deploy insurance:gateway_authorize to pg
-- requires: channels
-- requires: request_identity
-- API key hash + branch -> channel context and key generation, the only door through channels.
BEGIN;
SET LOCAL ROLE insurance_owner;
-- The public door of the gateway: an API key (its SHA-256, computed by the app) and the
-- branch of the URL -> the channel's context, from which the app signs the branch token.
-- No role may read insurance.channels, so this function crosses that boundary.
-- The context carries the key generation (`gen`), which the token keeps and
-- gateway.admit() checks; the require_role guard.

-- authorize(key_hash, branch): {id, name, branch, gen[, ia_keys][, integration_payload]} of the
-- channel, or PT401 INVALID_API_KEY (unknown key), PT403 CHANNEL_REVOKED (inactive channel),
-- PT403 BRANCH_NOT_ALLOWED (the channel may not use this branch).
CREATE FUNCTION gateway.authorize(_key_hash bytea, _branch text) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _c insurance.channels;
BEGIN
  PERFORM insurance.require_role('insurance_anon');
  SELECT * INTO _c FROM insurance.channels WHERE api_key_hash = _key_hash;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'Invalid API key', DETAIL = 'INVALID_API_KEY';
  END IF;
  IF NOT _c.active THEN
    RAISE EXCEPTION USING ERRCODE = 'PT403', MESSAGE = 'channel revoked', DETAIL = 'CHANNEL_REVOKED';
  END IF;
  IF NOT _branch = ANY (_c.branches) THEN
    RAISE EXCEPTION USING ERRCODE = 'PT403', MESSAGE = 'channel may not use this branch',
                          DETAIL = 'BRANCH_NOT_ALLOWED', HINT = pg_catalog.jsonb_build_object('branch', _branch)::text;
  END IF;
  RETURN pg_catalog.jsonb_build_object('id', _c.id, 'name', _c.name, 'branch', _branch,
                                     'gen', _c.key_generation)
      || CASE WHEN _branch LIKE 'ia/%' THEN pg_catalog.jsonb_build_object('ia_keys', _c.ia_keys)
              ELSE '{}' END
      || CASE WHEN _branch LIKE 'integrations/%'
              THEN pg_catalog.jsonb_build_object('integration_payload', _c.integration_payload)
              ELSE '{}' END;
END
$$;
COMMENT ON FUNCTION gateway.authorize(bytea, text) IS
  'The context {id, name, branch, gen, ia_keys (ia branches), integration_payload (integrations '
  'branches)} of the channel with this API key hash; raises PT401 INVALID_API_KEY, PT403 '
  'CHANNEL_REVOKED or BRANCH_NOT_ALLOWED. Anonymous role (the authorize routes).';
REVOKE ALL ON FUNCTION gateway.authorize(bytea, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.authorize(bytea, text) TO insurance_anon, insurance_app;
COMMIT;