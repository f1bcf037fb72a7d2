-- Deploy insurance:gateway_auth to pg
-- A gateway call let in: API key hash + branch -> channel context and key generation (the only door
-- through channels), admission, the token validator. CREATE OR REPLACE over the released functions
-- (those whose parameters were renamed dropped first).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- The rate limit's parameter is named _rate_limit, as gateway.reply and the app name it.
-- squawk-ignore ban-drop-function -- CREATE OR REPLACE keeps a parameter's name: each made anew below, same signature and grants, in this transaction
DROP FUNCTION gateway.token_channel(integer),
  gateway.admit(integer);
-- The public door of the gateway: an API key (its SHA-256, computed by the app) and the
-- branch of the URL -> the channel's context, from which the app signs the branch token.
-- No role may read insurance.channels, so this function crosses that boundary.
-- The context carries the key generation (`gen`), which the token keeps and
-- gateway.admit() checks; the require_role guard.

-- authorize(key_hash, branch): {id, name, branch, gen[, ia_keys][, integration_payload]} of the
-- channel, or PT401 INVALID_API_KEY (unknown key), PT403 CHANNEL_REVOKED (inactive channel),
-- PT403 BRANCH_NOT_ALLOWED (the channel may not use this branch).
CREATE OR REPLACE FUNCTION gateway.authorize(_key_hash bytea, _branch text) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _c insurance.channels;
BEGIN
  -- The role checked inline: require_role() (a call with its own search_path) only for
  -- another caller, which it refuses, or an operator, whom it lets through.
  IF pg_catalog.current_setting('role') <> 'insurance_anon' THEN
    PERFORM insurance.require_role('insurance_anon');
  END IF;
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
  -- no policy: only admit() writes it

-- gateway.reply (what every gateway entry point returns) is the released type, unchanged.
-- A token dies with its key generation and with its branch: admit() checks, in the same
-- query that finds the channel active, that the token's `gen` is the channel's current key
-- generation and its `branch` still one of the channel's branches.

-- admit(limit): the reply skeleton of a call by the token's channel (claim `sub`), or
-- PT401 INVALID_TOKEN when that channel is revoked or gone, its key was rotated since the
-- token was issued (claim `gen`), or it may no longer use the token's branch (claim `branch`).
-- limit <= 0: no counting.
CREATE OR REPLACE FUNCTION gateway.admit(_rate_limit integer) RETURNS gateway.reply
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  -- The claims once, as plain expressions: a (SELECT insurance.claim(...)) per claim ran a
  -- subquery and parsed the claims text for each (about half of this function's time).
  _claims  jsonb := insurance.claims();
  _channel uuid := (_claims ->> 'sub')::uuid;
  _window  timestamptz;
  _reply   gateway.reply;
  _hits    integer;
BEGIN
  IF NOT EXISTS (SELECT FROM insurance.channels c
                  WHERE c.id = _channel AND c.active
                    AND c.key_generation::text = _claims ->> 'gen'
                    AND _claims ->> 'branch' = ANY (c.branches)) THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'Invalid access token', DETAIL = 'INVALID_TOKEN';
  END IF;
  IF _rate_limit > 0 THEN
    _window := pg_catalog.date_trunc('minute', pg_catalog.now());
    INSERT INTO insurance.rate_limits AS r (channel_id, window_start, hits)
    VALUES (_channel, _window, 1)
    ON CONFLICT (channel_id) DO UPDATE
      SET hits = CASE WHEN r.window_start = EXCLUDED.window_start THEN r.hits + 1 ELSE 1 END,
          window_start = EXCLUDED.window_start
    RETURNING hits INTO _hits;
    _reply.rate_limit := _rate_limit;
    _reply.rate_remaining := _rate_limit - _hits;
    _reply.rate_reset := extract(epoch FROM _window + interval '1 minute')::bigint;
  END IF;
  RETURN _reply;
END
$$;
COMMENT ON FUNCTION gateway.admit(integer) IS
  'Admits a gateway call: the token''s channel is active, its key generation and branch current, and '
  'the per-minute counter under _rate_limit; returns the gateway.reply rate fields (data NULL, or refused '
  'when over the limit); raises PT401 INVALID_TOKEN. Channel role (gateway functions).';
REVOKE ALL ON FUNCTION gateway.admit(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.admit(integer) TO insurance_channel;

-- token_channel(limit): the channel {id, name} of a valid token whose channel is still active
-- (the validator routes; the decoded token itself is added by the app).
CREATE OR REPLACE FUNCTION gateway.token_channel(_rate_limit integer) RETURNS gateway.reply
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _reply gateway.reply;
BEGIN
  IF pg_catalog.current_setting('role') <> 'insurance_channel' THEN  -- as in authorize()
    PERFORM insurance.require_role('insurance_channel');
  END IF;
  _reply := gateway.admit(_rate_limit);
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  SELECT pg_catalog.jsonb_build_object('id', c.id, 'name', c.name, 'active', c.active)
    INTO _reply.data
    FROM insurance.channels c WHERE c.id = (SELECT insurance.claim('sub'))::uuid;
  RETURN _reply;
END
$$;
COMMENT ON FUNCTION gateway.token_channel(integer) IS
  'Admits the call and answers the token''s channel {id, name} (the validator routes): a gateway.reply.'
  ' Channel role.';
REVOKE ALL ON FUNCTION gateway.token_channel(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.token_channel(integer) TO insurance_channel, insurance_app;
COMMIT;
