-- Deploy insurance:rate_limits to pg
-- requires: channels
-- requires: request_identity
-- Admission of a gateway call: channel active, key generation and branch current, per-minute counter shared by every app process.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- Admission of a gateway call, done inside the route's own SQL call (no extra round trip):
-- the token's channel must still be active (a revoked channel's tokens stop at once), and,
-- when the app passes a limit > 0, the channel's calls of the current minute are counted
-- here, in PostgreSQL, so that the limit holds across every app process.

-- One row per channel: the current fixed one-minute window and its hits.
CREATE TABLE insurance.rate_limits (
  channel_id   uuid PRIMARY KEY REFERENCES insurance.channels ON DELETE CASCADE,
  window_start timestamptz NOT NULL,
  hits         integer NOT NULL CHECK (hits > 0)
);
COMMENT ON TABLE insurance.rate_limits IS 'Gateway calls per channel in the current minute (RATE_LIMIT_PER_MINUTE)';
ALTER TABLE insurance.rate_limits ENABLE ROW LEVEL SECURITY;  -- no policy: only admit() writes it

-- What every gateway entry point returns: the JSON data (NULL when refused by the limit)
-- and the rate-limit state for the X-RateLimit-* headers (NULL when the limit is off).
-- rate_remaining < 0 means the call was refused: answer 429.
CREATE TYPE gateway.reply AS (
  data           text,        -- JSON text (asyncpg decodes composites only in binary)
  rate_limit     integer,
  rate_remaining integer,
  rate_reset     bigint      -- epoch seconds at which the window ends
);
-- A token dies with its key generation and with its branch: admit() checks, in the same
-- query that finds the channel active, that the token's `gen` is the channel's current key
-- generation and its `branch` still one of the channel's branches.

-- admit(limit): the reply skeleton of a call by the token's channel (claim `sub`), or
-- PT401 INVALID_TOKEN when that channel is revoked or gone, its key was rotated since the
-- token was issued (claim `gen`), or it may no longer use the token's branch (claim `branch`).
-- limit <= 0: no counting.
CREATE FUNCTION gateway.admit(_limit integer) RETURNS gateway.reply
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

-- validate(limit): the channel {id, name} of a valid token whose channel is still active
-- (the validator routes; the decoded token itself is added by the app).
CREATE FUNCTION gateway.validate(_limit integer) RETURNS gateway.reply
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
COMMENT ON FUNCTION gateway.validate(integer) IS
  'Admits the call and answers the token''s channel {id, name} (the validator routes): a gateway.reply.'
  ' Channel role.';
REVOKE ALL ON FUNCTION gateway.validate(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.validate(integer) TO insurance_channel, insurance_app;
COMMIT;