-- insurance.claims() and insurance.claim(): how policies read the token.
BEGIN;
SELECT plan(4);

SELECT is(insurance.claims(), '{}'::jsonb, 'no claims set: an empty object');
SELECT set_config('request.jwt.claims', '', true);
SELECT is(insurance.claims(), '{}'::jsonb, 'an empty setting (left by a pooled connection) is no claims');
SELECT set_config('request.jwt.claims', '{"email": "holder@example.com", "sub": "42"}', true);
SELECT is(insurance.claim('email'), 'holder@example.com', 'claim() reads one claim');
SELECT is(insurance.claim('missing'), NULL, 'a missing claim is NULL');

SELECT * FROM finish();
ROLLBACK;
