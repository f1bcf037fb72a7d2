-- Deploy insurance:request_claims_inlined to pg
-- requires: request_claims
-- Same claims() and claim(), now inlinable: a LANGUAGE sql function with a SET clause is
-- never inlined, so every query whose RLS policy reads `(SELECT insurance.claim(...))`
-- parsed and planned both function bodies again on each execution (measured on this
-- machine: 130 us -> 29 us for one RLS-filtered lookup; about 300 us of the ~700 us of
-- database time of GET /api/gateway/v1/risk-items). A SQL-standard body (BEGIN ATOMIC) is
-- parsed once, when created, with every name bound then, so search_path cannot redirect it:
-- what `SET search_path = ''` guarded against, without its cost.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- claims(): the current request's claims, or '{}' when none are set.
-- nullif: a pooled connection keeps an empty string after the transaction that set it.
CREATE OR REPLACE FUNCTION insurance.claims() RETURNS jsonb
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT coalesce(nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb, '{}'::jsonb);
END;

-- claim(name): one claim as text, or NULL.
CREATE OR REPLACE FUNCTION insurance.claim(name text) RETURNS text
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT insurance.claims() ->> name;
END;

COMMIT;
