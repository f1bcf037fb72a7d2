-- Deploy insurance:dashboard_packages to pg
-- The back-office packages page
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE FUNCTION dashboard.list_packages() RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  RETURN coalesce((
    SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
             'id', p.id, 'uid', p.uid, 'name', p.name,
             'salesIntegration', p.sales_integration_slug, 'postSalesIntegration', p.post_sales_integration_slug,
             'variants', coalesce((SELECT pg_catalog.jsonb_agg(v.code ORDER BY v.code)
                                     FROM insurance.package_variants v WHERE v.package_id = p.id), '[]'),
             'channels', coalesce((SELECT pg_catalog.jsonb_agg(c.name ORDER BY c.name)
                                     FROM insurance.channel_packages cp JOIN insurance.channels c ON c.id = cp.channel_id
                                    WHERE cp.package_id = p.id AND c.active), '[]'),
             'createdAt', p.created_at) ORDER BY p.uid)
      FROM insurance.packages p), '[]');
END
$$;
COMMENT ON FUNCTION dashboard.list_packages() IS
  'Every package by uid: [{id, uid, name, salesIntegration, postSalesIntegration (the dashboard''s '
  '"Post-sales Integration"), variants[] (codes), channels[] (names of the active channels that may sell it), '
  'createdAt}]. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.list_packages() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.list_packages() TO insurance_dashboard, insurance_app;

COMMIT;
