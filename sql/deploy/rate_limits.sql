-- Deploy insurance:rate_limits to pg
-- requires: channels
-- requires: request_claims
-- requires: channel_key_generation
-- Rework: a token dies with its key generation and with its branch. admit() checks, in the
-- same query that finds the channel active, that the token's `gen` is the channel's current
-- key generation and its `branch` still one of the channel's branches; validate() is guarded
-- by require_role.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- admit(limit): the reply skeleton of a call by the token's channel (claim `sub`), or
-- PT401 INVALID_TOKEN when that channel is revoked or gone, its key was rotated since the
-- token was issued (claim `gen`), or it may no longer use the token's branch (claim `branch`).
-- limit <= 0: no counting.
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
REVOKE ALL ON FUNCTION gateway.admit(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.admit(integer) TO insurance_channel;

-- validate(limit): the channel {id, name} of a valid token whose channel is still active
-- (the validator routes; the decoded token itself is added by the app).
CREATE OR REPLACE FUNCTION gateway.validate(_limit integer) RETURNS gateway.reply
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
REVOKE ALL ON FUNCTION gateway.validate(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.validate(integer) TO insurance_channel, insurance_app;

COMMIT;
