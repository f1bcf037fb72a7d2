-- Revert insurance:gateway_auth from pg: back to the version released in v1.0.0, restated (the one
-- revert that cannot include its released deploy, gateway_auth@v0.9.0.sql: that script creates the
-- type gateway.reply, which functions of later changes return, so it cannot run again over them).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;
-- CREATE OR REPLACE keeps a parameter's name: the functions this version renamed are made anew.
DROP FUNCTION gateway.token_channel(integer), gateway.admit(integer);
CREATE OR REPLACE FUNCTION gateway.authorize(_key_hash bytea, _branch text) RETURNS jsonb
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
  -- no policy: only admit() writes it

CREATE OR REPLACE FUNCTION gateway.admit(_limit integer) RETURNS gateway.reply
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _channel uuid := (SELECT insurance.claim('sub'))::uuid;
  _window  timestamptz := pg_catalog.date_trunc('minute', pg_catalog.now());
  _reply   gateway.reply;
  _hits    integer;
BEGIN
  IF NOT EXISTS (SELECT FROM insurance.channels c
                  WHERE c.id = _channel AND c.active
                    AND c.key_generation::text = (SELECT insurance.claim('gen'))
                    AND (SELECT insurance.claim('branch')) = ANY (c.branches)) THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'Invalid access token', DETAIL = 'INVALID_TOKEN';
  END IF;
  IF _limit > 0 THEN
    INSERT INTO insurance.rate_limits AS r (channel_id, window_start, hits)
    VALUES (_channel, _window, 1)
    ON CONFLICT (channel_id) DO UPDATE
      SET hits = CASE WHEN r.window_start = EXCLUDED.window_start THEN r.hits + 1 ELSE 1 END,
          window_start = EXCLUDED.window_start
    RETURNING hits INTO _hits;
    _reply.rate_limit := _limit;
    _reply.rate_remaining := _limit - _hits;
    _reply.rate_reset := extract(epoch FROM _window + interval '1 minute')::bigint;
  END IF;
  RETURN _reply;
END
$$;
COMMENT ON FUNCTION gateway.admit(integer) IS
  'Admits a gateway call: the token''s channel is active, its key generation and branch current, and '
  'the per-minute counter under _limit; returns the gateway.reply rate fields (data NULL, or refused '
  'when over the limit); raises PT401 INVALID_TOKEN. Channel role (gateway functions).';
REVOKE ALL ON FUNCTION gateway.admit(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.admit(integer) TO insurance_channel;

CREATE OR REPLACE FUNCTION gateway.token_channel(_limit integer) RETURNS gateway.reply
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _reply gateway.reply;
BEGIN
  PERFORM insurance.require_role('insurance_channel');
  _reply := gateway.admit(_limit);
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
