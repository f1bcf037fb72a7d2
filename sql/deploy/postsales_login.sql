-- Deploy insurance:postsales_login to pg
-- Reworked after v0.9.0 (issue 31): device tokens exempt a request from the e-mail's ceilings.
-- Restated whole; CREATE OR REPLACE, since the released version runs first.
-- OTP issue and verify: cooldown, hourly caps per e-mail and per client IP, expiry, single use, attempts counted under a row lock.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- OTP issue and verification for the post-sales login. Python draws the 6-digit code from a
-- CSPRNG and sends only its keyed hash (HMAC-SHA256 with OTP_HASH_SECRET, which never enters
-- the database). The rules live here: holder check, expiry, single use, failed attempts
-- counted under a row lock, and limits that one address cannot aim at a holder elsewhere
-- (docs/security.md): a code belongs to the (e-mail, address) that asked for it; the 60 s
-- resend cooldown, the 5 codes an hour and the POSTSALES_OTP_MAX_ATTEMPTS failures of a code
-- are that pair's; above them, account-wide ceilings (20 codes and 50 failed verifications
-- an hour per e-mail, each trip audited and counted) stop what many addresses do together.
-- No role may read insurance.postsales_otp: these functions are SECURITY DEFINER.
-- Outcomes are returned, not raised, so that a counted attempt is never rolled back.

-- risk_item_ids_by_holder_email(email): ids of the active risk items whose holder
-- beneficiary has this e-mail. The specification calls this RPC
-- `postsales_risk_item_ids_by_holder_email` (a Supabase RPC in the public schema, where the
-- prefix said its surface); here the schema says it, and no client calls it: request_otp does.
CREATE OR REPLACE FUNCTION postsales.risk_item_ids_by_holder_email(_email text) RETURNS bigint[]
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
  SELECT coalesce(array_agg(DISTINCT ri.id ORDER BY ri.id), '{}')
    FROM insurance.beneficiaries b
    JOIN insurance.risk_items ri ON ri.id = b.risk_item_id
   WHERE b.is_holder AND b.email = lower(_email) AND ri.status = 'active'
$$;
COMMENT ON FUNCTION postsales.risk_item_ids_by_holder_email(text) IS
  'The ids of the active risk items whose holder has e-mail _email (the specification''s RPC '
  'postsales_risk_item_ids_by_holder_email). Service role.';
REVOKE ALL ON FUNCTION postsales.risk_item_ids_by_holder_email(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION postsales.risk_item_ids_by_holder_email(text) TO insurance_service;
-- OTP request and verify are limited per client IP as well as per e-mail (guessing
-- across many accounts from one address): every request, and every failed verification
-- (reserved before the compare, refunded on success), counts against the IP's hour.
-- Both entry points start with their require_role guard.

-- request_otp(email, code_hash, ttl_seconds, ip, ip_limit, device): issues a code for the e-mail,
-- to be verified from this address. `device`: the app verified the request's device token for
-- this e-mail (docs/security.md "Devices"): the e-mail's ceiling is not this request's. Every request counts against the client IP's hourly limit
-- first (ip_limit <= 0: none); then the (e-mail, address)'s cooldown and hourly cap, then the
-- e-mail's ceiling of 20 codes an hour from all addresses together.
-- Answers {"send": true} when the e-mail has active holder items (mail the code),
-- {"send": false} when it has none (a row with an unguessable hash is stored all the same, so
-- cooldown, cap and verification behave alike: no enumeration), or
-- {"error": "OTP_IP_RATE_LIMITED" | "OTP_COOLDOWN" | "OTP_RATE_LIMITED", "retry_after": seconds}.
CREATE OR REPLACE FUNCTION postsales.request_otp(_email text, _code_hash bytea, _ttl_seconds integer,
                                      _ip inet, _ip_limit integer, _device boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _address  text := lower(_email);
  _now    timestamptz := pg_catalog.now();
  _last   timestamptz;  -- of this address's codes for the e-mail in the last hour: the newest,
  _count  integer;      -- how many,
  _oldest timestamptz;  -- the oldest
  _all    integer;      -- of every address's: how many,
  _first  timestamptz;  -- the oldest
  _known  boolean;
  _wait   integer;
BEGIN
  PERFORM insurance.require_role('insurance_anon');
  IF _ttl_seconds IS NULL OR _ttl_seconds < 1 OR _code_hash IS NULL
     OR pg_catalog.length(_code_hash) <> 32 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'malformed OTP request', DETAIL = 'VALIDATION_ERROR';
  END IF;
  _wait := insurance._take_ip_slot('otp_request', _ip, _ip_limit);
  IF _wait IS NOT NULL THEN
    RETURN jsonb_build_object('error', 'OTP_IP_RATE_LIMITED', 'retry_after', _wait);
  END IF;
  -- One request per e-mail at a time: the cooldown and the cap cannot be raced.
  PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('postsales_otp:' || _address));

  DELETE FROM insurance.postsales_otp o WHERE o.email = _address AND o.created_at < _now - interval '1 hour'
     AND o.expires_at < _now;

  SELECT max(o.created_at) FILTER (WHERE o.ip IS NOT DISTINCT FROM _ip),
         count(*) FILTER (WHERE o.ip IS NOT DISTINCT FROM _ip),
         min(o.created_at) FILTER (WHERE o.ip IS NOT DISTINCT FROM _ip),
         count(*), min(o.created_at)
    INTO _last, _count, _oldest, _all, _first
    FROM insurance.postsales_otp o
   WHERE o.email = _address AND o.created_at > _now - interval '1 hour';

  IF _last > _now - interval '60 seconds' THEN
    RETURN jsonb_build_object('error', 'OTP_COOLDOWN', 'retry_after',
      greatest(1, ceil(extract(epoch FROM _last + interval '60 seconds' - _now))::integer));
  END IF;
  IF _count >= 5 THEN
    RETURN jsonb_build_object('error', 'OTP_RATE_LIMITED', 'retry_after',
      greatest(1, ceil(extract(epoch FROM _oldest + interval '1 hour' - _now))::integer));
  END IF;
  IF _all >= 20 AND NOT coalesce(_device, false) THEN  -- the account-wide ceiling: many addresses asking for one e-mail
    PERFORM insurance._report_account_ceiling('otp_request', _address, 20, _first + interval '1 hour');
    RETURN jsonb_build_object('error', 'OTP_RATE_LIMITED', 'retry_after',
      greatest(1, ceil(extract(epoch FROM _first + interval '1 hour' - _now))::integer));
  END IF;

  _known := pg_catalog.cardinality(postsales.risk_item_ids_by_holder_email(_address)) > 0;
  INSERT INTO insurance.postsales_otp (email, code_hash, created_at, expires_at, ip)
  VALUES (_address, CASE WHEN _known THEN _code_hash ELSE public.gen_random_bytes(32) END,
          _now, _now + pg_catalog.make_interval(secs => _ttl_seconds), _ip);
  RETURN jsonb_build_object('send', _known);
END
$$;
COMMENT ON FUNCTION postsales.request_otp(text, bytea, integer, inet, integer, boolean) IS
  'Stores a new code hash for _email and the client address _ip, valid _ttl_seconds, when it has active '
  'holder items and no per-IP limit (_ip_limit), (e-mail, address) cooldown or hourly cap, or e-mail '
  'ceiling (20 an hour, audited; not when _device) is hit; returns {send} (whether to mail the code) '
  'or {error: OTP_COOLDOWN|OTP_RATE_LIMITED|OTP_IP_RATE_LIMITED, retry_after}; raises PT400 '
  'VALIDATION_ERROR. Anonymous role.';
REVOKE ALL ON FUNCTION postsales.request_otp(text, bytea, integer, inet, integer, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION postsales.request_otp(text, bytea, integer, inet, integer, boolean) TO insurance_anon, insurance_app;

-- request_otp(email, code_hash, ttl_seconds, ip, ip_limit): the same without a device (the
-- released signature).
CREATE OR REPLACE FUNCTION postsales.request_otp(_email text, _code_hash bytea, _ttl_seconds integer,
                                      _ip inet, _ip_limit integer)
RETURNS jsonb
LANGUAGE sql VOLATILE SET search_path = '' AS $$
  SELECT insurance.require_role('insurance_anon');
  SELECT postsales.request_otp(_email, _code_hash, _ttl_seconds, _ip, _ip_limit, false)
$$;
COMMENT ON FUNCTION postsales.request_otp(text, bytea, integer, inet, integer) IS
  'postsales.request_otp(..., false): a code request without a device. Anonymous role.';
REVOKE ALL ON FUNCTION postsales.request_otp(text, bytea, integer, inet, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION postsales.request_otp(text, bytea, integer, inet, integer) TO insurance_anon, insurance_app;

-- verify_otp(email, code_hash, max_attempts, ip, ip_limit, device): checks the latest code that
-- this address asked for the e-mail (another address's guesses never reach it). `device`: the
-- app verified the request's device token for this e-mail: the e-mail's ceiling is not its own. Past 50 failed
-- verifications of the e-mail's codes in the hour, from all addresses together (the
-- account-wide ceiling, audited), nothing is compared (OTP_ATTEMPTS_EXHAUSTED).
-- A failed verification of the client IP is reserved before anything is compared and given
-- back on success: past ip_limit failures in the hour, nothing is compared (OTP_IP_RATE_LIMITED).
-- Locks its row, counts the attempt and compares in one step: concurrent guesses queue on the
-- lock, every failed one is counted, and none is evaluated once max_attempts have failed.
-- Answers {"ok": true, "email": ...} (the code is consumed) or {"error": code, ...}:
--   OTP_INVALID (no code, wrong code, already used), OTP_EXPIRED,
--   OTP_ATTEMPTS_EXHAUSTED with retry_after (seconds until a new code may be requested).
CREATE OR REPLACE FUNCTION postsales.verify_otp(_email text, _code_hash bytea, _max_attempts integer,
                                     _ip inet, _ip_limit integer, _device boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _address  text := lower(_email);
  _now      timestamptz := pg_catalog.clock_timestamp();
  _otp      insurance.postsales_otp;
  _wait     integer;
  _failures integer;
  _first    timestamptz;
BEGIN
  PERFORM insurance.require_role('insurance_anon');
  _wait := insurance._take_ip_slot('otp_verify_failure', _ip, _ip_limit);
  IF _wait IS NOT NULL THEN
    RETURN jsonb_build_object('error', 'OTP_IP_RATE_LIMITED', 'retry_after', _wait);
  END IF;
  -- The account-wide ceiling: the failures evaluated against the e-mail's codes of the hour.
  SELECT sum(least(o.attempts, _max_attempts)), min(o.created_at) INTO _failures, _first
    FROM insurance.postsales_otp o
   WHERE o.email = _address AND o.created_at > _now - interval '1 hour';
  IF _failures >= 50 AND NOT coalesce(_device, false) THEN
    PERFORM insurance._report_account_ceiling('otp_verify', _address, 50, _first + interval '1 hour');
    RETURN jsonb_build_object('error', 'OTP_ATTEMPTS_EXHAUSTED', 'retry_after',
      greatest(1, ceil(extract(epoch FROM _first + interval '1 hour' - _now))::integer));
  END IF;
  SELECT * INTO _otp FROM insurance.postsales_otp o
   WHERE o.email = _address AND o.ip IS NOT DISTINCT FROM _ip
   ORDER BY o.created_at DESC, o.id DESC LIMIT 1
   FOR UPDATE;
  IF NOT FOUND OR _otp.consumed_at IS NOT NULL THEN
    RETURN jsonb_build_object('error', 'OTP_INVALID');
  END IF;
  IF _otp.expires_at <= _now THEN
    RETURN jsonb_build_object('error', 'OTP_EXPIRED');
  END IF;
  IF _otp.attempts >= _max_attempts THEN
    UPDATE insurance.postsales_otp SET attempts = attempts + 1 WHERE id = _otp.id;
    RETURN jsonb_build_object('error', 'OTP_ATTEMPTS_EXHAUSTED', 'retry_after',
      greatest(1, ceil(extract(epoch FROM _otp.created_at + interval '60 seconds' - _now))::integer));
  END IF;
  IF _otp.code_hash = _code_hash THEN
    UPDATE insurance.postsales_otp SET consumed_at = _now WHERE id = _otp.id;
    PERFORM insurance._refund_ip_slot('otp_verify_failure', _ip);
    RETURN jsonb_build_object('ok', true, 'email', _address);
  END IF;
  UPDATE insurance.postsales_otp SET attempts = attempts + 1 WHERE id = _otp.id;
  RETURN jsonb_build_object('error', 'OTP_INVALID');
END
$$;
COMMENT ON FUNCTION postsales.verify_otp(text, bytea, integer, inet, integer, boolean) IS
  'Checks _code_hash against the latest code the address _ip asked for _email, counting a failure '
  'atomically (at most _max_attempts a code; a per-IP failure reserved first; at most 50 an hour for '
  'the e-mail from all addresses, audited, unless _device); returns {ok, email} and consumes the code, or '
  '{error: OTP_INVALID|OTP_EXPIRED|OTP_ATTEMPTS_EXHAUSTED|OTP_IP_RATE_LIMITED, retry_after}. Anonymous '
  'role.';
REVOKE ALL ON FUNCTION postsales.verify_otp(text, bytea, integer, inet, integer, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION postsales.verify_otp(text, bytea, integer, inet, integer, boolean) TO insurance_anon, insurance_app;

-- verify_otp(email, code_hash, max_attempts, ip, ip_limit): the same without a device (the
-- released signature).
CREATE OR REPLACE FUNCTION postsales.verify_otp(_email text, _code_hash bytea, _max_attempts integer,
                                     _ip inet, _ip_limit integer)
RETURNS jsonb
LANGUAGE sql VOLATILE SET search_path = '' AS $$
  SELECT insurance.require_role('insurance_anon');
  SELECT postsales.verify_otp(_email, _code_hash, _max_attempts, _ip, _ip_limit, false)
$$;
COMMENT ON FUNCTION postsales.verify_otp(text, bytea, integer, inet, integer) IS
  'postsales.verify_otp(..., false): a verification without a device. Anonymous role.';
REVOKE ALL ON FUNCTION postsales.verify_otp(text, bytea, integer, inet, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION postsales.verify_otp(text, bytea, integer, inet, integer) TO insurance_anon, insurance_app;
COMMIT;
