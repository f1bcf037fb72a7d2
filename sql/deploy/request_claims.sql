-- Deploy insurance:request_claims to pg
-- requires: schemas
-- The token's claims reach SQL only through the transaction, as PostgREST does:
--   set_config('request.jwt.claims', '<json>', true)
-- Read them through these helpers, and in a policy as `(SELECT insurance.claim('email'))`
-- so that they run once per query, not once per row.
-- Both are SQL-standard bodies (BEGIN ATOMIC) without a SET clause, so the planner inlines
-- them: a SET clause forbids inlining, and every RLS-filtered query then planned both bodies
-- again (measured: 130 us -> 29 us for one lookup). A BEGIN ATOMIC body binds every name
-- when it is created, so search_path cannot redirect it, which is what SET guarded against.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- claims(): the current request's claims, or '{}' when none are set.
-- nullif: a pooled connection keeps an empty string after the transaction that set it.
CREATE FUNCTION insurance.claims() RETURNS jsonb
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT coalesce(nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb, '{}'::jsonb);
END;

-- claim(name): one claim as text, or NULL.
CREATE FUNCTION insurance.claim(name text) RETURNS text
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT insurance.claims() ->> name;
END;

GRANT EXECUTE ON FUNCTION insurance.claims(), insurance.claim(text)
   TO insurance_anon, insurance_holder, insurance_channel, insurance_service, insurance_dashboard;

COMMIT;
