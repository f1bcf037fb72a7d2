-- The data model: tables, keys, checks, RLS enabled, roles and grants.
BEGIN;
\ir helpers/common.psql
SELECT plan(49);

SELECT has_schema(s) FROM unnest(ARRAY['insurance', 'postsales', 'gateway', 'integrations', 'outbox', 'dashboard']) AS s;

SELECT has_table('insurance', t, 'table insurance.' || t || ' exists')
  FROM unnest(ARRAY['packages', 'package_variants', 'channels', 'risk_items', 'beneficiaries',
                    'authorized_claimants', 'postsales_otp', 'integrations', 'integration_emissions',
                    'orders', 'dashboard_users', 'dashboard_sessions']) AS t;
SELECT has_table('outbox', 'http_requests', 'the outbox table exists');

-- RLS enabled (default deny) on every table that holds holder, channel or emission data.
SELECT ok(c.relrowsecurity, 'RLS enabled on insurance.' || c.relname)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'insurance'
   AND c.relname IN ('channels', 'risk_items', 'beneficiaries', 'authorized_claimants', 'postsales_otp',
                     'integration_emissions', 'orders', 'dashboard_users', 'dashboard_sessions')
 ORDER BY c.relname;

-- Keys and constraints the later queries and rules rely on.
SELECT col_is_unique('insurance', 'integration_emissions', ARRAY['risk_item_id', 'provider', 'event'],
                     'one emission per (risk_item_id, provider, event)');
SELECT col_is_unique('insurance', 'risk_items', ARRAY['package_id', 'policy_uid'], 'one policy uid per package');
SELECT col_is_pk('insurance', 'authorized_claimants', ARRAY['email', 'risk_item_id'], 'claimants keyed by e-mail first');
SELECT fk_ok('insurance', 'risk_items', ARRAY['package_id', 'variant'],
             'insurance', 'package_variants', ARRAY['package_id', 'code']);
SELECT throws_ok($$INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status)
                   VALUES (1, 'PROVIDER_A', 'POLICY_CREATED', 'DONE')$$, '23514', NULL, 'status is SUCCESS, FAILED or ABANDONED');
SELECT throws_ok($$INSERT INTO insurance.integrations (slug) VALUES ('provider_a')$$, '23514', NULL,
                 'integration slugs are upper case');
SELECT throws_ok($$INSERT INTO insurance.packages (uid, name) VALUES ('bad uid!', 'x')$$, '23514', NULL,
                 'package uids are plain identifiers');

-- A risk item's variant must be one its package sells.
INSERT INTO insurance.packages (uid, name) VALUES ('schema-test', 'Schema test');
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'schema-test';
SELECT throws_ok($$INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
                   SELECT id, 'POL-1', 'home' FROM insurance.packages WHERE uid = 'schema-test'$$,
                 '23503', NULL, 'a variant the package does not sell is refused');
SELECT lives_ok($$INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
                  SELECT id, 'POL-1', 'travel' FROM insurance.packages WHERE uid = 'schema-test'$$,
                'a variant the package sells is accepted');
SELECT throws_ok($$INSERT INTO insurance.beneficiaries (risk_item_id, name, is_holder)
                   SELECT id, 'No mail', true FROM insurance.risk_items WHERE policy_uid = 'POL-1'$$,
                 '23514', NULL, 'a holder beneficiary needs an e-mail');

-- Roles: the app login owns nothing, cannot bypass RLS, and holds no table privilege itself.
SELECT is((SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = 'insurance_app'), false,
          'insurance_app is neither superuser nor BYPASSRLS');
SELECT is((SELECT rolinherit FROM pg_roles WHERE rolname = 'insurance_app'), false,
          'insurance_app does not inherit the surface roles');
SELECT is((SELECT count(*)::int FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
            WHERE r.rolname = 'insurance_app'), 0, 'insurance_app owns nothing');
SELECT is((SELECT rolbypassrls FROM pg_roles WHERE rolname = 'insurance_owner'), false,
          'the owner role has no BYPASSRLS attribute');
SELECT table_privs_are('insurance', 'risk_items', 'insurance_app', ARRAY[]::text[],
                       'insurance_app has no privilege on risk_items by itself');
SELECT ok(pg_has_role('insurance_app', r, 'MEMBER'), 'insurance_app may switch to ' || r)
  FROM unnest(ARRAY['insurance_anon', 'insurance_holder', 'insurance_channel', 'insurance_service',
                    'insurance_dashboard']) AS r;

-- Default deny: a surface role with a table grant but without claims sees no row.
SELECT pg_temp.act_as('insurance_channel');
SELECT is((SELECT count(*)::int FROM insurance.risk_items), 0,
          'a channel role without claims sees no risk item (RLS denies by default)');
SELECT pg_temp.as_operator();

SELECT * FROM finish();
ROLLBACK;
