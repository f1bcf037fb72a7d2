-- Every function the app's login (insurance_app) may EXECUTE refuses a call made the way
-- app/db.py makes it (one statement: the role switch in a subquery, then the call) under a
-- role it is not meant for: 42501. EXECUTE is checked against the login before the switch,
-- so only the function itself (its require_role() guard, or what it may not touch under the
-- switched role) can refuse. The list comes from the catalog: a new entry point without a
-- guard fails here. "Meant for" = the surface roles holding EXECUTE on it; "none" is the
-- login without a switch.
--
-- Each case runs twice: as insurance_app, and as a second login that plays the app's part
-- under another name (pg_temp.second_app_login(): a login granted insurance_app). A guard
-- that trusts a login's name holds for the first and not for the second.
BEGIN;
\ir helpers/common.psql

CREATE TEMP TABLE guard_cases ON COMMIT DROP AS
SELECT p.oid::regprocedure AS fn, r.role,
       format('SELECT %s(%s) FROM (SELECT set_config(''role'', %L, true) OFFSET 0) AS _auth',
              p.oid::regproc,
              (SELECT string_agg('NULL::' || format_type(t, NULL), ', ' ORDER BY i)
                 FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(t, i)),
              r.role) AS call
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
 CROSS JOIN unnest(ARRAY['none', 'insurance_anon', 'insurance_holder', 'insurance_channel',
                         'insurance_service', 'insurance_dashboard']) AS r(role)
 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
   AND EXISTS (SELECT FROM aclexplode(p.proacl) a
                WHERE a.grantee = 'insurance_app'::regrole AND a.privilege_type = 'EXECUTE')
   AND (r.role = 'none' OR NOT has_function_privilege(r.role, p.oid, 'EXECUTE'));
GRANT SELECT ON guard_cases TO PUBLIC;

SELECT plan((SELECT 2 * count(*)::int + 3 FROM guard_cases));
SELECT cmp_ok((SELECT count(DISTINCT fn)::int FROM guard_cases), '>=', 30,
              'the catalog lists the entry points (a broken query would test nothing)');
-- Otherwise the second login's calls would be refused before any guard ran, proving nothing.
SELECT is(ARRAY(SELECT DISTINCT fn::text FROM guard_cases
                 WHERE NOT has_function_privilege(pg_temp.second_app_login(), fn, 'EXECUTE')
                    OR NOT has_schema_privilege(pg_temp.second_app_login(),
                                                (SELECT pronamespace FROM pg_proc WHERE oid = fn), 'USAGE')
                 ORDER BY 1),
          ARRAY[]::text[], 'the second login reaches every entry point that insurance_app reaches');

-- One throws_ok per case, as the given login with no role switched; a call that wrongly
-- succeeds leaves its role switched, so every case starts from the unswitched login.
CREATE FUNCTION pg_temp.guard_tests(_login name) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  _c record;
  _who text := CASE _login WHEN 'insurance_app' THEN 'insurance_app' ELSE 'a second app login' END;
BEGIN
  PERFORM pg_temp.as_login(_login);
  FOR _c IN SELECT * FROM guard_cases ORDER BY fn::text, role LOOP
    PERFORM pg_temp.act_as('none');
    RETURN NEXT throws_ok(_c.call, '42501', NULL,
                          format('%s refuses a call under %s, as %s', _c.fn, _c.role, _who));
  END LOOP;
  PERFORM pg_temp.as_operator();
END
$$;

SELECT * FROM pg_temp.guard_tests('insurance_app');
SELECT * FROM pg_temp.guard_tests(pg_temp.second_app_login());

-- A third login: its own name, and insurance_app's memberships granted to it directly, but
-- INHERIT (CREATE ROLE's default; a DBA who copies the memberships and not NOINHERIT).
-- Unswitched, it holds every surface role's privileges, so only a require_role() guard
-- refuses it; an entry point that relies on what its switched role may not touch (a helper
-- only the holder may EXECUTE, a table only the service role may read) lets it through.
SELECT format('CREATE ROLE %I LOGIN INHERIT NOSUPERUSER NOBYPASSRLS IN ROLE insurance_app, insurance_anon, '
              'insurance_holder, insurance_channel, insurance_service, insurance_dashboard',
              'insurance_app_copy_' || pg_backend_pid()) \gexec
CREATE FUNCTION pg_temp.not_refused(_login name) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  _c record;
  _through text[] := '{}';
BEGIN
  PERFORM pg_temp.as_login(_login);
  FOR _c IN SELECT * FROM guard_cases WHERE role = 'none' ORDER BY fn::text LOOP
    PERFORM pg_temp.act_as('none');
    BEGIN
      EXECUTE _c.call;
      _through := _through || format('%s: ran', _c.fn);
    EXCEPTION WHEN OTHERS THEN
      IF SQLSTATE <> '42501' THEN
        _through := _through || format('%s: %s %s', _c.fn, SQLSTATE, SQLERRM);
      END IF;
    END;
  END LOOP;
  PERFORM pg_temp.as_operator();
  RETURN _through;
END
$$;
SELECT is(pg_temp.not_refused('insurance_app_copy_' || pg_backend_pid()), '{}'::text[],
          'every entry point refuses an unswitched login that inherits the surface roles');

SELECT * FROM finish();
ROLLBACK;
