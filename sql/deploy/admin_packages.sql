-- Deploy insurance:admin_packages to pg
-- Command line: create and list packages (audited)
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- ---------------------------------------------------------------- packages

-- create_package: a package and its variants ([{code, name, premium, currency, coverages}],
-- at least one); PACKAGE_EXISTS for a taken uid, VARIANT_REQUIRED without a variant.
CREATE FUNCTION admin.create_package(_actor text, _uid text, _name text, _sales_slug text,
                                     _post_sales_slug text, _variants jsonb)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _package insurance.packages;
  _targets jsonb := pg_catalog.jsonb_build_array(_uid);
BEGIN
  IF EXISTS (SELECT FROM insurance.packages p WHERE p.uid = _uid) THEN
    RETURN admin._refused(_actor, 'packages.create', _targets, 'PACKAGE_EXISTS',
                          pg_catalog.format('a package with uid %s exists already', _uid));
  END IF;
  IF pg_catalog.jsonb_typeof(_variants) IS DISTINCT FROM 'array' OR pg_catalog.jsonb_array_length(_variants) = 0 THEN
    RETURN admin._refused(_actor, 'packages.create', _targets, 'VARIANT_REQUIRED',
                          'a package needs at least one variant');
  END IF;
  INSERT INTO insurance.packages (uid, name, sales_integration_slug, post_sales_integration_slug)
  VALUES (_uid, _name, _sales_slug, _post_sales_slug) RETURNING * INTO _package;
  INSERT INTO insurance.package_variants (package_id, code, name, premium, currency, coverages)
  SELECT _package.id, v.code, v.name, v.premium, v.currency, coalesce(v.coverages, '[]')
    FROM pg_catalog.jsonb_to_recordset(_variants)
         AS v(code text, name text, premium numeric, currency text, coverages jsonb);
  PERFORM insurance.record_audit(_actor, 'packages.create', _targets, 'ok',
            pg_catalog.jsonb_build_object('id', _package.id));
  RETURN admin.package_json(_package.id);
END
$$;
COMMENT ON FUNCTION admin.create_package(text, text, text, text, text, jsonb) IS
  'Creates package _uid with its integration slugs and variants ([{code, name, premium, currency, '
  'coverages}], at least one); audited; returns admin.package_json, or refuses PACKAGE_EXISTS / '
  'INVALID_VARIANTS. Operators (command line).';

-- package_json: a package with its variants, as the command line prints it.
CREATE FUNCTION admin.package_json(_id bigint)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = ''
AS $$
  SELECT pg_catalog.jsonb_build_object(
           'id', p.id, 'uid', p.uid, 'name', p.name,
           'sales_integration_slug', p.sales_integration_slug,
           'post_sales_integration_slug', p.post_sales_integration_slug,
           'variants', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                                          'code', v.code, 'name', v.name, 'premium', v.premium,
                                          'currency', v.currency, 'coverages', v.coverages) ORDER BY v.code)
                                   FROM insurance.package_variants v WHERE v.package_id = p.id), '[]'))
    FROM insurance.packages p WHERE p.id = _id
$$;
COMMENT ON FUNCTION admin.package_json(bigint) IS
  'Package _id with its variants as the command line prints it, or NULL. Operators.';

-- list_packages: every package with its variants, oldest first.
CREATE FUNCTION admin.list_packages()
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = ''
AS $$
  SELECT coalesce(pg_catalog.jsonb_agg(admin.package_json(p.id) ORDER BY p.id), '[]')
    FROM insurance.packages p
$$;
COMMENT ON FUNCTION admin.list_packages() IS
  'Every package with its variants, oldest first, as a JSON array. Operators.';

COMMIT;
