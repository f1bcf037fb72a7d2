-- Partners stay in their lane: a channel creates items only in the packages it sells, with no
-- metadata key that the system owns; set_channel_packages changes the list (audited).
BEGIN;
\ir helpers/common.psql
SELECT plan(10);

INSERT INTO insurance.channels (id, name, api_key_hash) VALUES
  ('abababab-0000-4000-8000-000000000043', 'Lane', public.digest('lane-key', 'sha256'));
INSERT INTO insurance.packages (uid, name) VALUES ('lane-mine', 'Mine'), ('lane-theirs', 'Theirs');
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid LIKE 'lane-%';

SELECT is(admin.set_channel_packages('cli:pgtap', 'abababab-0000-4000-8000-000000000043', ARRAY['lane-mine']),
          '{"id": "abababab-0000-4000-8000-000000000043", "packages": ["lane-mine"]}'::jsonb,
          'set_channel_packages gives the channel its packages');
SELECT is((SELECT action || ' ' || actor FROM insurance.audit_log ORDER BY id DESC LIMIT 1),
          'channels.set_packages cli:pgtap', 'and writes an audit row');
SELECT is(admin.set_channel_packages('cli:pgtap', 'abababab-0000-4000-8000-000000000043', ARRAY['lane-nope', 'lane-mine']),
          '{"error": "UNKNOWN_PACKAGE", "message": "no package with uid lane-nope"}'::jsonb,
          'an unknown package uid is refused, and nothing changes');

SELECT pg_temp.act_as('insurance_channel', '{"sub": "abababab-0000-4000-8000-000000000043", "branch": "v1", "gen": 1}');
SELECT lives_ok($$SELECT gateway.create_risk_item(0, '{"package_uid": "lane-mine", "policy_uid": "LANE-1", "variant": "travel", "insured_subject": {},
                                                     "metadata": {"partnerRef": "x"}}')$$,
                'a channel sells its own package, with metadata of its own');
SELECT throws_ok($$SELECT gateway.create_risk_item(0, '{"package_uid": "lane-theirs", "policy_uid": "LANE-2", "variant": "travel", "insured_subject": {}}')$$,
                 'PT403', 'this channel may not sell this package', 'another package is refused');
SELECT throws_ok($$SELECT gateway.create_risk_item(0, '{"package_uid": "lane-mine", "policy_uid": "LANE-3", "variant": "travel", "insured_subject": {},
                                                       "metadata": {"integration": {"status": "SUCCESS"}}}')$$,
                 'PT422', 'metadata holds keys that the system owns', 'a system-owned metadata key is refused');
SELECT pg_temp.as_operator();
INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
  SELECT id, 'THEIRS-1', 'travel' FROM insurance.packages WHERE uid = 'lane-theirs';
SELECT pg_temp.act_as('insurance_channel', '{"sub": "abababab-0000-4000-8000-000000000043", "branch": "v1", "gen": 1}');
SELECT throws_ok($$SELECT gateway.create_risk_item(0, '{"package_uid": "lane-theirs", "policy_uid": "THEIRS-1", "variant": "travel", "insured_subject": {}}')$$,
                 'PT403', NULL, 'another partner''s policy number: refused for the package, never a 409 that tells it exists');
SELECT pg_temp.as_operator();

SELECT is(admin.set_channel_packages('cli:pgtap', 'abababab-0000-4000-8000-000000000043', ARRAY['lane-theirs']) -> 'packages',
          '["lane-theirs"]'::jsonb, 'the list is replaced');
SELECT pg_temp.act_as('insurance_channel', '{"sub": "abababab-0000-4000-8000-000000000043", "branch": "v1", "gen": 1}');
SELECT throws_ok($$SELECT gateway.create_risk_item(0, '{"package_uid": "lane-mine", "policy_uid": "LANE-4", "variant": "travel", "insured_subject": {}}')$$,
                 'PT403', NULL, 'a package taken away is refused at once');
SELECT pg_temp.as_operator();
SELECT lives_ok($$INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, metadata)
                  SELECT id, 'abababab-0000-4000-8000-000000000043', 'OPS-1', 'travel', '{"integration": {}}'
                    FROM insurance.packages WHERE uid = 'lane-mine'$$,
                'operators are trusted: the check is on partner input');

SELECT * FROM finish();
ROLLBACK;
