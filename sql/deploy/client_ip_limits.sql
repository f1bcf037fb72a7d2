-- Deploy insurance:client_ip_limits to pg
-- Per-client-IP limits in fixed one-hour windows, counted here so that they hold across
-- every app process: OTP requests (POSTSALES_OTP_IP_PER_HOUR) and failed OTP verifications
-- (POSTSALES_VERIFY_IP_PER_HOUR). A slot is taken before the work it guards and given back
-- when the work turns out not to count (a successful verification).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.client_ip_limits (
  kind         text NOT NULL CHECK (kind IN ('otp_request', 'otp_verify_failure')),
  ip           inet NOT NULL,
  window_start timestamptz NOT NULL,
  -- squawk-ignore prefer-bigint-over-int -- hits of one client IP in one hour, capped far below 2^31
  hits         integer NOT NULL CHECK (hits >= 0),
  PRIMARY KEY (kind, ip)
);
CREATE INDEX client_ip_limits_window_start_idx ON insurance.client_ip_limits (window_start);
COMMENT ON TABLE insurance.client_ip_limits IS 'Per-client-IP counters of the current hour (OTP request and verify limits)';
ALTER TABLE insurance.client_ip_limits ENABLE ROW LEVEL SECURITY;  -- no policy: only the functions below

-- _take_ip_slot(kind, ip, limit): counts one hit of the IP in the current hour; NULL when it is
-- within the limit (or there is no IP or limit), else the seconds until the window ends.
CREATE FUNCTION insurance._take_ip_slot(_kind text, _ip inet, _limit integer) RETURNS integer
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _window timestamptz := pg_catalog.date_trunc('hour', pg_catalog.now());
  _hits   integer;
BEGIN
  IF _ip IS NULL OR _limit IS NULL OR _limit <= 0 THEN
    RETURN NULL;
  END IF;
  INSERT INTO insurance.client_ip_limits AS l (kind, ip, window_start, hits)
  VALUES (_kind, _ip, _window, 1)
  ON CONFLICT (kind, ip) DO UPDATE
    SET hits = CASE WHEN l.window_start = EXCLUDED.window_start THEN l.hits + 1 ELSE 1 END,
        window_start = EXCLUDED.window_start
  RETURNING hits INTO _hits;
  IF _hits <= _limit THEN
    RETURN NULL;
  END IF;
  RETURN greatest(1, ceil(extract(epoch FROM _window + interval '1 hour' - pg_catalog.now()))::integer);
END
$$;
COMMENT ON FUNCTION insurance._take_ip_slot(text, inet, integer) IS
  'Takes one hit of kind _kind for client _ip in the current hour; returns the seconds until the hour '
  'ends when the hit would pass _limit (nothing taken), else NULL; a NULL ip or _limit 0 takes nothing.'
  ' OTP functions only.';

-- _refund_ip_slot(kind, ip): gives back a hit taken in the current hour.
CREATE FUNCTION insurance._refund_ip_slot(_kind text, _ip inet) RETURNS void
LANGUAGE sql VOLATILE SET search_path = '' AS $$
  UPDATE insurance.client_ip_limits SET hits = hits - 1
   WHERE kind = _kind AND ip = _ip AND hits > 0
     AND window_start = pg_catalog.date_trunc('hour', pg_catalog.now())
$$;
COMMENT ON FUNCTION insurance._refund_ip_slot(text, inet) IS
  'Gives back one hit of kind _kind taken by client _ip in the current hour. OTP functions only.';
REVOKE ALL ON FUNCTION insurance._take_ip_slot(text, inet, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION insurance._refund_ip_slot(text, inet) FROM PUBLIC;

COMMIT;
