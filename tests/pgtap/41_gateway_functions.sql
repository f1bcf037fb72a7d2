-- Gateway functions: authorize's refusals and context, admission (active channel, rate
-- limit counted in the database), and the risk-item functions' domain errors.
BEGIN;
\ir helpers/common.psql
SELECT plan(25);

INSERT INTO insurance.channels (id, name, branches, api_key_hash, ia_keys, integration_payload) VALUES
  ('cccccccc-0000-4000-8000-000000000001', 'C', '{v1,ia/v1,integrations/v2}', public.digest('key-c', 'sha256'),
   '{"api_key": "sk-c"}', '{"insurer_id": "INS-C", "webhooks": ["https://c.example/h"]}');
INSERT INTO insurance.channels (id, name, api_key_hash, active, revoked_at) VALUES
  ('dddddddd-0000-4000-8000-000000000002', 'D', public.digest('key-d', 'sha256'), false, now());
INSERT INTO insurance.packages (uid, name) VALUES ('fn-pkg', 'Functions');
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, v, initcap(v) FROM insurance.packages, unnest(ARRAY['travel', 'home']) AS v WHERE uid = 'fn-pkg';
INSERT INTO insurance.channel_packages (channel_id, package_id)
  SELECT 'cccccccc-0000-4000-8000-000000000001', id FROM insurance.packages WHERE uid = 'fn-pkg';

-- authorize, as anon
SELECT pg_temp.act_as('insurance_anon');
SELECT is(gateway.authorize(public.digest('key-c', 'sha256'), 'v1'),
          '{"id": "cccccccc-0000-4000-8000-000000000001", "name": "C", "branch": "v1", "gen": 1}'::jsonb,
          'v1: the channel context without payloads');
SELECT is(gateway.authorize(public.digest('key-c', 'sha256'), 'ia/v1') -> 'ia_keys', '{"api_key": "sk-c"}'::jsonb,
          'ia: the AI keys');
SELECT is(gateway.authorize(public.digest('key-c', 'sha256'), 'integrations/v2') -> 'integration_payload' ->> 'insurer_id',
          'INS-C', 'integrations: the integration payload');
SELECT throws_ok($$SELECT gateway.authorize(public.digest('nope', 'sha256'), 'v1')$$,
                 'PT401', 'Invalid API key', 'an unknown key');
SELECT throws_ok($$SELECT gateway.authorize(public.digest('key-d', 'sha256'), 'v1')$$,
                 'PT403', 'channel revoked', 'a revoked channel');
SELECT throws_ok($$SELECT gateway.authorize(public.digest('key-c', 'sha256'), 'v2')$$,
                 'PT403', 'channel may not use this branch', 'a branch the channel may not use');
SELECT throws_ok($$SELECT gateway.list_risk_items(0, 0, 49, NULL)$$, '42501', NULL,
                 'anon cannot call the channel''s functions');
SELECT pg_temp.as_operator();

-- admission, as the channel
SELECT pg_temp.act_as('insurance_channel', '{"sub": "cccccccc-0000-4000-8000-000000000001", "branch": "v1", "gen": 1}');
SELECT is((gateway.list_risk_items(0, 0, 49, NULL)).rate_limit, NULL, 'limit 0: nothing counted');
SELECT is(ARRAY[(gateway.admit(2)).rate_remaining, (gateway.admit(2)).rate_remaining, (gateway.admit(2)).rate_remaining],
          ARRAY[1, 0, -1], 'the third call of a minute with limit 2 is over it');
SELECT is((gateway.list_risk_items(2, 0, 49, NULL)).data, NULL, 'a call over the limit does no work');
SELECT is((gateway.admit(2)).rate_reset,
          extract(epoch FROM date_trunc('minute', now()) + interval '1 minute')::bigint,
          'the window ends at the next minute');
SELECT pg_temp.as_operator();
SELECT pg_temp.age_rows('insurance.rate_limits', '1 minute', $$channel_id = 'cccccccc-0000-4000-8000-000000000001'$$);
SELECT pg_temp.act_as('insurance_channel', '{"sub": "cccccccc-0000-4000-8000-000000000001", "branch": "v1", "gen": 1}');
SELECT is((gateway.admit(2)).rate_remaining, 1, 'a new minute starts a new count');

-- risk items
SELECT is(((gateway.create_risk_item(0, '{"package_uid": "fn-pkg", "policy_uid": "FN-1", "variant": "home",
            "insured_subject": {"n": 1}, "beneficiaries": [{"name": "H", "email": "H@X.IO", "isHolder": true}]}'
          )).data::jsonb -> 'beneficiaries' -> 0 ->> 'email'), 'h@x.io', 'create: e-mails are stored lower case');
SELECT throws_ok($$SELECT gateway.create_risk_item(0, '{"package_uid": "fn-pkg", "policy_uid": "FN-1", "variant": "travel", "insured_subject": {}}')$$,
                 'PT409', 'this policy exists already in the package', 'the same policy twice in a package');
SELECT throws_ok($$SELECT gateway.create_risk_item(0, '{"package_uid": "no-pkg", "policy_uid": "FN-2", "variant": "travel", "insured_subject": {}}')$$,
                 'PT422', 'unknown package', 'an unknown package');
SELECT throws_ok($$SELECT gateway.create_risk_item(0, '{"package_uid": "fn-pkg", "policy_uid": "FN-2", "variant": "health", "insured_subject": {}}')$$,
                 'PT422', 'the package does not sell this variant', 'a variant the package does not sell');
SELECT is((gateway.list_risk_items(0, 0, 49, 'FN-1')).data::jsonb -> 'total', '1'::jsonb, 'list: the total count');
-- The list and the page print their answers' text themselves: it must stay the text jsonb prints.
SELECT is((gateway.list_risk_items(0, 0, 49, NULL)).data, ((gateway.list_risk_items(0, 0, 49, NULL)).data::jsonb)::text,
          'list: the answer is the text jsonb prints of it');
SELECT is((gateway.page_risk_items(0, 1, NULL, NULL)).data, ((gateway.page_risk_items(0, 1, NULL, NULL)).data::jsonb)::text,
          'page: the answer is the text jsonb prints of it');
SELECT is((gateway.list_risk_items(0, 0, 49, NULL)).data::jsonb,
          jsonb_build_object('items', (SELECT jsonb_agg(d.document ORDER BY d.risk_item_id) FROM insurance.risk_item_documents d),
                             'total', 1, 'from', 0, 'to', 49),
          'list: the channel''s stored documents, its total and the window');

-- create: every broken rule at once, per field; the beneficiaries' rules are the table's own
CREATE FUNCTION pg_temp.create_problems(_item jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  PERFORM gateway.create_risk_item(0, _item);
  RETURN NULL;
EXCEPTION WHEN SQLSTATE 'PT400' THEN
  DECLARE _hint text; BEGIN GET STACKED DIAGNOSTICS _hint = PG_EXCEPTION_HINT; RETURN _hint::jsonb; END;
END
$$;
SELECT is((SELECT jsonb_agg(p ->> 'field' ORDER BY p ->> 'field') FROM jsonb_array_elements(pg_temp.create_problems(
           '{"package_uid": 1, "variant": "home", "extra": true, "beneficiaries": [{"name": "A", "isHolder": "y"}, 3]}')) p),
          '["beneficiaries[0].isHolder", "beneficiaries[1]", "extra", "insured_subject", "package_uid", "policy_uid"]',
          'create: the body''s shape, every field at once');
SELECT is((SELECT jsonb_agg(p ->> 'field' ORDER BY p ->> 'field') FROM jsonb_array_elements(pg_temp.create_problems(
           '{"package_uid": "fn-pkg", "policy_uid": "FN-3", "variant": "home", "insured_subject": {},
             "beneficiaries": [{"name": "", "email": "not-an-e-mail", "document": "ddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"},
                               {"name": "H", "isHolder": true, "share": 101}]}')) p),
          '["beneficiaries[0].document", "beneficiaries[0].email", "beneficiaries[0].name", "beneficiaries[1].email", "beneficiaries[1].isHolder", "beneficiaries[1].share"]',
          'create: each rule of insurance.beneficiaries that a beneficiary breaks');
SELECT is((SELECT p ->> 'message' FROM jsonb_array_elements(pg_temp.create_problems(
           '{"package_uid": "fn-pkg", "policy_uid": "FN-3", "variant": "home", "insured_subject": {},
             "beneficiaries": [{"name": "A", "email": "A@b"}]}')) p),
          'must be an e-mail address', 'create: the message is the constraint''s comment');

-- a revoked channel's calls stop at once
SELECT pg_temp.as_operator();
UPDATE insurance.channels SET active = false, revoked_at = now() WHERE id = 'cccccccc-0000-4000-8000-000000000001';
SELECT pg_temp.act_as('insurance_channel', '{"sub": "cccccccc-0000-4000-8000-000000000001", "branch": "v1", "gen": 1}');
SELECT throws_ok($$SELECT gateway.list_risk_items(0, 0, 49, NULL)$$, 'PT401', 'Invalid access token',
                 'a revoked channel''s token is refused');
SELECT throws_ok($$SELECT gateway.token_channel(0)$$, 'PT401', 'Invalid access token',
                 'also on the validator');
SELECT pg_temp.as_operator();

SELECT * FROM finish();
ROLLBACK;
