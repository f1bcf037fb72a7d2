-- A person's data (insurance.personal_data, insurance_people): the map names real columns; a
-- policy's end is recorded and starts its retention; the dispatch and delivered outbox rows keep
-- ids, not people; erasure deletes history, keeps contract data under retention and
-- pseudonymizes it once the retention is over (by request or by the hourly job); exports,
-- erasures and back-office views are audited; only operators and the dashboard reach them.
BEGIN;
\ir helpers/common.psql
SELECT plan(37);

-- The map names columns that exist, and a JSON path only on a JSON column.
SELECT is(ARRAY(SELECT m.relation || '.' || m.column_name FROM insurance.personal_data m
                 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a
                                    WHERE a.attrelid = m.relation::regclass AND a.attname = m.column_name
                                      AND NOT a.attisdropped
                                      AND (m.json_path = '' OR a.atttypid IN ('jsonb'::regtype, 'json'::regtype)))),
          '{}'::text[], 'every place of the map is a column of that table (a JSON path on a JSON column)');
SELECT is(ARRAY(SELECT DISTINCT m.rule FROM insurance.personal_data m
                 WHERE NOT EXISTS (SELECT FROM insurance.retention_rules r WHERE r.rule = m.rule)),
          '{}'::text[], 'every place has a declared retention rule');

INSERT INTO insurance.packages (uid, name, sales_integration_slug) VALUES ('pgtap-privacy', 'Privacy', 'PROVIDER_A');
INSERT INTO insurance.package_variants (package_id, code, name) SELECT id, 'travel', 'Travel'
  FROM insurance.packages WHERE uid = 'pgtap-privacy';
DELETE FROM outbox.http_requests;
INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
SELECT id, p.policy, 'travel', p.subject FROM insurance.packages,
       (VALUES ('priv-held', '{"name": "Ada", "email": "ada@privacy.invalid", "document": "X123", "trip": "Rome"}'::jsonb),
               ('priv-bob', '{"name": "Bob", "email": "bob@privacy.invalid", "trip": "Oslo"}'::jsonb)) AS p(policy, subject)
 WHERE uid = 'pgtap-privacy';
CREATE TEMP TABLE _i AS SELECT policy_uid, id, uid FROM insurance.risk_items WHERE policy_uid LIKE 'priv-%';
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, document, is_holder, share)
SELECT i.id, b.name, b.email, b.document, b.holder, b.share
  FROM _i i JOIN (VALUES ('priv-held', 'Ada', 'ada@privacy.invalid', 'X123', true, 100),
                         ('priv-bob', 'Bob', 'bob@privacy.invalid', NULL, true, 50),
                         ('priv-bob', 'Ada', 'ada@privacy.invalid', 'X123', false, 50))
                 AS b(policy, name, email, document, holder, share) ON b.policy = i.policy_uid;

-- Minimization: the dispatch names the item; a delivered row keeps no body, a webhook's keeps it.
SELECT is((SELECT body FROM outbox.http_requests WHERE body -> 'record' ->> 'uid' = (SELECT uid::text FROM _i WHERE policy_uid = 'priv-held')),
          jsonb_build_object('type', 'INSERT', 'table', 'risk_items', 'record',
                             (SELECT jsonb_build_object('id', id, 'uid', uid) FROM _i WHERE policy_uid = 'priv-held')),
          'the dispatch queued for the worker carries the item''s id and uid only');
INSERT INTO insurance.channels (id, name, api_key_hash) VALUES
  ('ffffffff-0000-4000-8000-000000000092', 'P92', public.digest('p92', 'sha256'));
INSERT INTO outbox.http_requests (url, body, channel_id)
VALUES ('https://partner.example.com/hook', '{"type": "emission.succeeded", "data": {"riskItemId": 1}}',
        'ffffffff-0000-4000-8000-000000000092'),
       ('https://chat.example.com/hook', '{"text": "PROVIDER_A failed for Ada Lovelace"}', NULL),
       ('/api/integrations/dispatch', '{"type": "INSERT", "table": "risk_items", "record": {"id": 7, "uid": "u", "insured_subject": {"name": "Ada"}}}', NULL);
UPDATE outbox.http_requests SET delivered_at = now();
SELECT is(ARRAY(SELECT coalesce(body::text, 'none') FROM outbox.http_requests ORDER BY id DESC LIMIT 3),
          ARRAY['{"type": "INSERT", "table": "risk_items", "record": {"id": 7, "uid": "u"}}', 'none',
                '{"data": {"riskItemId": 1}, "type": "emission.succeeded"}'],
          'delivered: a body keeps only its ids (a chat notice none), a partner webhook keeps its own');
SELECT is((SELECT count(*)::int FROM outbox.http_requests WHERE url = '/api/integrations/dispatch'
            AND body = jsonb_build_object('type', 'INSERT', 'table', 'risk_items', 'record', body -> 'record')), 3,
          'the delivered dispatches still name their items');

-- A policy's end.
UPDATE insurance.risk_items SET status = 'expired' WHERE policy_uid = 'priv-bob';
SELECT is((SELECT ended_at FROM insurance.risk_items WHERE policy_uid = 'priv-bob'), now(), 'the end of a policy is recorded');
UPDATE insurance.risk_items SET metadata = '{"x": 1}' WHERE policy_uid = 'priv-bob';
SELECT is((SELECT ended_at FROM insurance.risk_items WHERE policy_uid = 'priv-bob'), now(), 'another change leaves it');
UPDATE insurance.risk_items SET status = 'active' WHERE policy_uid = 'priv-bob';
SELECT is((SELECT ended_at FROM insurance.risk_items WHERE policy_uid = 'priv-bob'), NULL, 'active again: no end');
UPDATE insurance.risk_items SET status = 'cancelled' WHERE policy_uid = 'priv-bob';
SELECT is(insurance.policy_retention(), '10 years'::interval, 'contract data is kept ten years by default');
SELECT is((SELECT insurance.retained_until(r) FROM insurance.risk_items r WHERE policy_uid = 'priv-bob'),
          now() + interval '10 years', 'until the end plus the retention');
SELECT is((SELECT insurance.retained_until(r) FROM insurance.risk_items r WHERE policy_uid = 'priv-held'),
          NULL, 'an active policy: no date yet');
SET LOCAL insurance.policy_retention = '2 years';
SELECT is(insurance.policy_retention(), '2 years'::interval, 'the retention is the insurance.policy_retention setting');
RESET insurance.policy_retention;
SELECT throws_ok($$SELECT insurance.set_policy_retention('1 hour')$$, '22023', NULL, 'a retention under a day is refused');

-- Erasure under retention.
INSERT INTO insurance.postsales_otp (email, code_hash, expires_at, ip)
VALUES ('ada@privacy.invalid', '\x00', now() + interval '5 minutes', '192.0.2.92');
SELECT is(admin.person_erase('cli:dpo', 'Ada@Privacy.invalid') -> 'erased' ->> 'loginCodes', '1',
          'erasure deletes the login codes and their addresses');
SELECT is((SELECT count(*)::int FROM insurance.postsales_otp WHERE email = 'ada@privacy.invalid'), 0, 'none is left');
SELECT is((SELECT jsonb_agg(k ->> 'policyUid' ORDER BY k ->> 'policyUid')
             FROM jsonb_array_elements(admin.person_erase('cli:dpo', 'ada@privacy.invalid') -> 'kept') k),
          '["priv-bob", "priv-held"]', 'contract data under retention is kept, both as holder and as beneficiary');
SELECT is((SELECT count(*)::int FROM insurance.beneficiaries WHERE email = 'ada@privacy.invalid'), 2,
          'and stays as it was');
SELECT is(admin.person_erase('cli:dpo', 'ada@privacy.invalid') -> 'erased',
          '{"loginCodes": 0, "ceilingTrips": 0, "outboxBodies": 0, "providerAnswers": 0}', 'a second erasure erases nothing');
SELECT is((SELECT count(*)::int FROM insurance.audit_log WHERE action = 'people.erase' AND targets = '["ada@privacy.invalid"]'),
          3, 'each erasure is audited, naming the person');

-- The retention is over: the hourly pass pseudonymizes the ended policy, not the active one.
SELECT pg_temp.age_rows('insurance.risk_items', '10 years 1 day', $$policy_uid = 'priv-bob'$$);
SELECT is(insurance.apply_personal_data_retention(), 1, 'the retention pass pseudonymizes the ended policy');
SELECT is(ARRAY(SELECT name || ' ' || (email LIKE 'erased-%@erased.invalid') || ' ' || (document IS NULL)
                  FROM insurance.beneficiaries WHERE risk_item_id = (SELECT id FROM _i WHERE policy_uid = 'priv-bob') ORDER BY id),
          ARRAY['erased true true', 'erased true true'], 'its beneficiaries: no name, no e-mail, no document');
SELECT is((SELECT insured_subject FROM insurance.risk_items WHERE policy_uid = 'priv-bob'), '{"trip": "Oslo"}',
          'its insured subject loses the declared keys, keeps the contract''s others');
SELECT is((SELECT document -> 'beneficiaries' -> 0 ->> 'name' FROM insurance.risk_item_documents
            WHERE risk_item_id = (SELECT id FROM _i WHERE policy_uid = 'priv-bob')), 'erased', 'its stored document follows');
SELECT is(insurance.apply_personal_data_retention(), 0, 'once');
SELECT is(insurance.purge_expired() ->> 'pseudonymized', '0', 'the hourly job runs the pass');
SELECT is((SELECT jsonb_agg(i ->> 'policyUid') FROM jsonb_array_elements(admin.person_export('cli:dpo', 'ada@privacy.invalid') -> 'riskItems') i),
          '["priv-held"]', 'the export no longer finds the person in the pseudonymized policy');

-- Who looked.
SELECT id AS held_id FROM _i WHERE policy_uid = 'priv-held' \gset
SELECT pg_temp.act_as('insurance_dashboard', '{"role": "dashboard", "email": "ops@privacy.invalid", "sub": "1"}');
SELECT ok(dashboard.record_view('people.viewRiskItem', ARRAY[:held_id]::bigint[], '{}', '{}') > 0,
          'the dashboard records a view');
SELECT throws_ok($$SELECT dashboard.record_view('users.disable', '{}', '{}', '{}')$$, 'PT400', NULL, 'only view actions');
SELECT pg_temp.as_operator();
SELECT is((SELECT actor || ' ' || targets::text FROM insurance.audit_log WHERE action = 'people.viewRiskItem' ORDER BY id DESC LIMIT 1),
          'dashboard:ops@privacy.invalid ["ada@privacy.invalid", {"riskItemId": ' || :held_id || '}]',
          'the view names the operator, the item and its people');
SELECT is((SELECT jsonb_agg(a ->> 'action' ORDER BY a ->> 'id' DESC) -> 0 FROM jsonb_array_elements(admin.audit_about('ada@privacy.invalid', 100)) a),
          '"people.viewRiskItem"', 'audit --about finds it');

-- A view is audited in the call that shows it: tRPC byRiskItem and the back-office's pages.
INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, attempts)
VALUES (:held_id, 'PROVIDER_A', 'POLICY_CREATED', 'SUCCESS', 1) RETURNING id AS held_emission \gset
SELECT max(id) AS audit_before FROM insurance.audit_log \gset
SELECT pg_temp.act_as('insurance_dashboard', '{"role": "dashboard", "email": "ops@privacy.invalid", "sub": "1"}');
SELECT is(dashboard.view_risk_item(:held_id, NULL, 'trpc'), dashboard.risk_item_emissions(:held_id, NULL),
          'view_risk_item answers what risk_item_emissions answers');
SELECT is((dashboard.view_emission(:held_emission) -> 'riskItem' ->> 'id')::bigint, :held_id::bigint,
          'view_emission answers the emission''s detail');
SELECT is(current_setting('synchronous_commit'), 'off',
          'a view''s transaction does not wait for the disk (a view, never a change, may be lost in a crash)');
SELECT throws_ok('SELECT dashboard.view_risk_item(-1, NULL, ''backoffice'')', 'PT404', NULL,
                 'an item nobody can see is not found');
SELECT throws_ok(format('SELECT dashboard.view_risk_item(%s, NULL, %L)', :held_id, 'cli'), 'PT400', NULL,
                 'a view comes through the back-office or tRPC');
SELECT pg_temp.as_operator();
SELECT is(ARRAY(SELECT action || ' ' || via || ' ' || targets::text FROM insurance.audit_log
                 WHERE id > :audit_before ORDER BY id),
          ARRAY['people.viewRiskItem trpc ["ada@privacy.invalid", {"riskItemId": ' || :held_id || '}]',
                'people.viewEmission backoffice ["ada@privacy.invalid", {"riskItemId": ' || :held_id || '}]'],
          'each shown view wrote one row naming the surface and the item''s people; the refused ones none');

SELECT ok(NOT has_function_privilege('insurance_app', 'admin.person_erase(text, text)', 'EXECUTE')
          AND NOT has_function_privilege('insurance_dashboard', 'insurance._person_erase(text, text, text)', 'EXECUTE')
          AND NOT has_function_privilege('insurance_holder', 'dashboard.person_export(text)', 'EXECUTE'),
          'only operators and the dashboard export or erase');

SELECT * FROM finish();
ROLLBACK;
