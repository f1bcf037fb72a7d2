-- Revert insurance:request_claims_inlined from pg
-- Back to the definitions of request_claims.
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE OR REPLACE FUNCTION insurance.claim(name text) RETURNS text
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT insurance.claims() ->> name
$$;

CREATE OR REPLACE FUNCTION insurance.claims() RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT coalesce(nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb, '{}'::jsonb)
$$;

COMMIT;
