-- Deploy insurance:admin_people to pg
-- Command line: a person's data exported (`people export`), erased under retention (`people erase`),
-- and the audit rows about them (`audit --about`); each export and erasure audited.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- The operator's connection: via and on_behalf_of come from the transaction's settings, as for
-- every admin function.
CREATE FUNCTION admin.person_export(_actor text, _email text) RETURNS jsonb
LANGUAGE sql SET search_path = '' AS $$
  SELECT insurance._person_export(_actor, _email, NULL)
$$;
COMMENT ON FUNCTION admin.person_export(text, text) IS
  'Command line `people export`: everything held about a person (insurance._person_export), audited. Operators.';
REVOKE ALL ON FUNCTION admin.person_export(text, text) FROM PUBLIC;

CREATE FUNCTION admin.person_erase(_actor text, _email text) RETURNS jsonb
LANGUAGE sql SET search_path = '' AS $$
  SELECT insurance._person_erase(_actor, _email, NULL)
$$;
COMMENT ON FUNCTION admin.person_erase(text, text) IS
  'Command line `people erase`: erasure under retention (insurance._person_erase), audited. Operators.';
REVOKE ALL ON FUNCTION admin.person_erase(text, text) FROM PUBLIC;

-- audit_about(email, limit): the audit rows naming a person, newest first.
CREATE FUNCTION admin.audit_about(_email text, _limit integer) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.to_jsonb(a) ORDER BY a.id DESC), '[]')
    FROM (SELECT a.id, a.at, a.actor, a.on_behalf_of AS "onBehalfOf", a.via, a.action, a.targets, a.result,
                 a.details
            FROM insurance.audit_log a
           WHERE a.targets @> pg_catalog.jsonb_build_array(pg_catalog.lower(_email))
              OR a.targets @> pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('email', pg_catalog.lower(_email)))
           ORDER BY a.id DESC LIMIT _limit) a
$$;
COMMENT ON FUNCTION admin.audit_about(text, integer) IS
  'The audit rows whose targets name the e-mail (views, exports, erasures, changes), newest first, at most _limit. '
  'Operators (`audit --about`).';
REVOKE ALL ON FUNCTION admin.audit_about(text, integer) FROM PUBLIC;

COMMIT;
