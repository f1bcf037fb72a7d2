-- Deploy insurance:request_claims to pg
-- requires: schemas
-- The token's claims reach SQL only through the transaction, as PostgREST does:
--   set_config('request.jwt.claims', '<json>', true)
-- Read them through these helpers, and in a policy as `(SELECT insurance.claim('email'))`
-- so that they run once per query, not once per row.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- claims(): the current request's claims, or '{}' when none are set.
-- nullif: a pooled connection keeps an empty string after the transaction that set it.
CREATE FUNCTION insurance.claims() RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT coalesce(nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb, '{}'::jsonb)
$$;

-- claim(name): one claim as text, or NULL.
CREATE FUNCTION insurance.claim(name text) RETURNS text
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT insurance.claims() ->> name
$$;

GRANT EXECUTE ON FUNCTION insurance.claims(), insurance.claim(text)
   TO insurance_anon, insurance_holder, insurance_channel, insurance_service, insurance_dashboard;

COMMIT;
