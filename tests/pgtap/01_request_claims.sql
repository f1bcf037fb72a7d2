-- insurance.claims() and insurance.claim(): how policies read the token.
BEGIN;
\ir helpers/common.psql
SELECT plan(6);

SELECT is(insurance.claims(), '{}'::jsonb, 'no claims set: an empty object');
SELECT pg_temp.with_claims(NULL);
SELECT is(insurance.claims(), '{}'::jsonb, 'an empty setting (left by a pooled connection) is no claims');
SELECT pg_temp.with_claims('{"email": "holder@example.com", "sub": "42"}');
SELECT is(insurance.claim('email'), 'holder@example.com', 'claim() reads one claim');
SELECT is(insurance.claim('missing'), NULL, 'a missing claim is NULL');

-- Inlinable: every RLS policy reads a claim, so a SET clause (which forbids inlining)
-- would plan the bodies again on every query.
SELECT ok((SELECT bool_and(prosqlbody IS NOT NULL) FROM pg_proc
            WHERE oid IN ('insurance.claims()'::regprocedure, 'insurance.claim(text)'::regprocedure)),
          'claims() and claim() have SQL-standard bodies, bound when created');
SELECT ok((SELECT bool_and(proconfig IS NULL) FROM pg_proc
            WHERE oid IN ('insurance.claims()'::regprocedure, 'insurance.claim(text)'::regprocedure)),
          'claims() and claim() have no SET clause, so the planner inlines them');

SELECT * FROM finish();
ROLLBACK;
