-- A gateway token dies with its key generation and with its branch: admit() (inside every
-- gateway entry point) refuses a token issued before a rotation or for a branch taken away.
BEGIN;
\ir helpers/common.psql
SELECT plan(7);

INSERT INTO insurance.channels (id, name, branches, api_key_hash) VALUES
  ('eeeeeeee-0000-4000-8000-000000000042', 'G', '{v1,v2}', public.digest('key-g1', 'sha256'));
SELECT is((SELECT key_generation FROM insurance.channels WHERE id = 'eeeeeeee-0000-4000-8000-000000000042'), 1,
          'a new channel starts at generation 1');

CREATE FUNCTION pg_temp.call_as(_claims text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_temp.act_as('insurance_channel', _claims::jsonb);
  PERFORM gateway.token_channel(0);
  PERFORM pg_temp.as_operator();
  RETURN 'admitted';
EXCEPTION WHEN OTHERS THEN
  PERFORM pg_temp.as_operator();
  RETURN SQLSTATE || ' ' || SQLERRM;
END
$$;

SELECT is(pg_temp.call_as('{"sub": "eeeeeeee-0000-4000-8000-000000000042", "branch": "v2", "gen": 1}'),
          'admitted', 'a token of the current generation and an allowed branch is admitted');
SELECT is(pg_temp.call_as('{"sub": "eeeeeeee-0000-4000-8000-000000000042", "branch": "v2"}'),
          'PT401 Invalid access token', 'a token without a generation is refused');

UPDATE insurance.channels SET api_key_hash = public.digest('key-g2', 'sha256')
 WHERE id = 'eeeeeeee-0000-4000-8000-000000000042';
SELECT is((SELECT key_generation FROM insurance.channels WHERE id = 'eeeeeeee-0000-4000-8000-000000000042'), 2,
          'a new key is a new generation');
SELECT is(pg_temp.call_as('{"sub": "eeeeeeee-0000-4000-8000-000000000042", "branch": "v2", "gen": 1}'),
          'PT401 Invalid access token', 'a token of the rotated key is refused at once');

UPDATE insurance.channels SET branches = '{v1}', key_generation = 7 WHERE id = 'eeeeeeee-0000-4000-8000-000000000042';
SELECT is(pg_temp.call_as('{"sub": "eeeeeeee-0000-4000-8000-000000000042", "branch": "v2", "gen": 2}'),
          'PT401 Invalid access token', 'a token of a branch the channel lost is refused at once');
SELECT is(pg_temp.call_as('{"sub": "eeeeeeee-0000-4000-8000-000000000042", "branch": "v1", "gen": 2}'),
          'admitted', 'narrowing keeps the generation (nobody sets it by hand) and the remaining branches');

SELECT * FROM finish();
ROLLBACK;
