-- The audit log: record_audit appends, the dashboard reads, nobody rewrites history.
BEGIN;
\ir helpers/common.psql
SELECT plan(7);

SELECT isnt(insurance.record_audit('cli:pgtap', 'channels.create', '["c-1"]'), NULL,
            'record_audit returns the new row id');
SELECT results_eq($$SELECT actor, action, targets, result FROM insurance.audit_log WHERE actor = 'cli:pgtap'$$,
                  $$VALUES ('cli:pgtap', 'channels.create', '["c-1"]'::jsonb, 'ok')$$,
                  'the row holds actor, action, targets and result ok by default');
SELECT throws_ok($$SELECT insurance.record_audit('cli:pgtap', 'not an action', '[]')$$, '23514', NULL,
                 'an action is <area>.<verb>');
SELECT throws_ok($$SELECT insurance.record_audit('cli:pgtap', 'emissions.retry', '{}')$$, '23514', NULL,
                 'targets are a JSON array');

SELECT pg_temp.act_as('insurance_dashboard');
SELECT is((SELECT count(*) FROM insurance.audit_log WHERE actor = 'cli:pgtap'), 1::bigint,
          'a dashboard session reads the log');
SELECT throws_ok($$UPDATE insurance.audit_log SET result = 'forged'$$, '42501', NULL,
                 'a dashboard session cannot rewrite it');
SELECT pg_temp.as_login('insurance_app');
SELECT throws_ok($$SELECT insurance.record_audit('x', 'emissions.retry', '[]')$$, '42501', NULL,
                 'the app login cannot write rows of its own');
SELECT pg_temp.as_operator();

SELECT * FROM finish();
ROLLBACK;
