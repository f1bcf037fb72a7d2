-- Deploy insurance:dashboard_sync to pg
-- requires: dashboard_access
-- requires: emission_claims
-- requires: audit_log
-- requires: entry_point_roles
-- syncBeneficiaries used to borrow the service role to claim its emission key; the dashboard
-- now has an entry point of its own, called as insurance_dashboard with the session's claims.
-- And a risk item's emissions can be asked for by uid as well as by id.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- begin_beneficiaries_sync(_id, _uid, _claimed_by, _lease_seconds): claim the
-- BENEFICIARIES_SYNC key of a risk item (by id or uid) for its package's post-sales provider,
-- as integrations.begin_emission answers it (SKIPPED when the package has none). The access
-- check is the dashboard policies' own: a live session's claims (role dashboard, a sub); else
-- PT401. An unknown item is PT404 NOT_FOUND. The audit row names the session's user.
CREATE FUNCTION dashboard.begin_beneficiaries_sync(_id bigint, _uid uuid, _claimed_by text,
                                                   _lease_seconds integer)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
  _item bigint;
  _item_uid uuid;
  _provider text;
  _begun jsonb;
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  IF insurance.claim('role') IS DISTINCT FROM 'dashboard' OR insurance.claim('sub') IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'a valid dashboard session is required',
                          DETAIL = 'UNAUTHORIZED';
  END IF;
  SELECT r.id, r.uid, p.post_sales_integration_slug INTO _item, _item_uid, _provider
    FROM insurance.risk_items r JOIN insurance.packages p ON p.id = r.package_id
   WHERE (_id IS NOT NULL OR _uid IS NOT NULL)
     AND (_id IS NULL OR r.id = _id) AND (_uid IS NULL OR r.uid = _uid);
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'NOT_FOUND';
  END IF;
  _begun := integrations.begin_emission(_item, _provider, 'BENEFICIARIES_SYNC', _claimed_by, _lease_seconds);
  PERFORM insurance.record_audit('dashboard:' || coalesce(insurance.claim('email'), insurance.claim('sub')),
            'emissions.sync', pg_catalog.jsonb_build_array(_item_uid), 'ok',
            pg_catalog.jsonb_build_object('provider', _provider, 'status', _begun ->> 'status',
                                          'claimed', _begun -> 'claimed'));
  RETURN _begun;
END
$$;
REVOKE ALL ON FUNCTION dashboard.begin_beneficiaries_sync(bigint, uuid, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.begin_beneficiaries_sync(bigint, uuid, text, integer)
   TO insurance_dashboard, insurance_app;

-- risk_item_emissions(_id, _uid): dashboard.emissions_by_risk_item of the item named by id or
-- uid (read as the caller, under the dashboard policies); PT404 NOT_FOUND otherwise.
CREATE FUNCTION dashboard.risk_item_emissions(_id bigint, _uid uuid)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = ''
AS $$
DECLARE
  _item bigint := _id;
BEGIN
  IF _uid IS NOT NULL THEN
    SELECT r.id INTO _item FROM insurance.risk_items r WHERE r.uid = _uid AND (_id IS NULL OR r.id = _id);
  END IF;
  RETURN dashboard.emissions_by_risk_item(coalesce(_item, 0));
END
$$;
REVOKE ALL ON FUNCTION dashboard.risk_item_emissions(bigint, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.risk_item_emissions(bigint, uuid) TO insurance_dashboard, insurance_app;

COMMIT;
