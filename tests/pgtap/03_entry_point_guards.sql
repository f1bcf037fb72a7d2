-- Every function the app's login (insurance_app) may EXECUTE refuses a call made the way
-- app/db.py makes it (one statement: the role switch in a subquery, then the call) under a
-- role it is not meant for: 42501. EXECUTE is checked against the login before the switch,
-- so only the function's own require_role() guard can refuse. The list comes from the
-- catalog: a new entry point without a guard fails here. "Meant for" = the surface roles
-- holding EXECUTE on it; "none" is the login without a switch.
BEGIN;

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

SELECT plan((SELECT count(*)::int + 1 FROM guard_cases));
SELECT cmp_ok((SELECT count(DISTINCT fn)::int FROM guard_cases), '>=', 30,
              'the catalog lists the entry points (a broken query would test nothing)');

-- One throws_ok per case, as the app's login with no role switched; a call that wrongly
-- succeeds leaves its role switched, so every case starts from RESET ROLE.
CREATE FUNCTION pg_temp.guard_tests() RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  _c record;
BEGIN
  FOR _c IN SELECT * FROM guard_cases ORDER BY fn::text, role LOOP
    PERFORM set_config('role', 'none', true);
    RETURN NEXT throws_ok(_c.call, '42501', NULL, format('%s refuses a call under %s', _c.fn, _c.role));
  END LOOP;
  PERFORM set_config('role', 'none', true);
END
$$;
GRANT EXECUTE ON FUNCTION pg_temp.guard_tests() TO PUBLIC;

SET LOCAL SESSION AUTHORIZATION insurance_app;
SELECT * FROM pg_temp.guard_tests();
RESET SESSION AUTHORIZATION;

SELECT * FROM finish();
ROLLBACK;
