-- Deploy insurance:dashboard_beneficiaries_sync to pg
-- The back-office beneficiaries sync: queue a holder's beneficiaries to the post-sales insurer (audited)
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- syncBeneficiaries claims its emission key through an entry point of its own, called as
-- insurance_dashboard with the session's claims.
-- And a risk item's emissions can be asked for by uid as well as by id.

-- begin_beneficiaries_sync(_id, _uid, _claimed_by, _lease_seconds): claim the
-- BENEFICIARIES_SYNC key of a risk item (by id or uid) for its package's post-sales provider,
-- as integrations.begin_batch answers it (skipped when the package has none). The access
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
  _begun := integrations._begin_one(pg_catalog.jsonb_build_object('riskItemId', _item, 'provider', _provider,
                                                                'event', 'BENEFICIARIES_SYNC'),
                                    _claimed_by, _lease_seconds);
  PERFORM insurance.record_audit(dashboard._actor(),
            'emissions.sync', pg_catalog.jsonb_build_array(_item_uid), 'ok',
            pg_catalog.jsonb_build_object('provider', _provider, 'status', _begun ->> 'status',
                                          'claimed', _begun -> 'claimed', 'via', 'trpc'));
  RETURN _begun;
END
$$;
COMMENT ON FUNCTION dashboard.begin_beneficiaries_sync(bigint, uuid, text, integer) IS
  'Claims the beneficiaries-sync emission key of the item named by id or uid '
  '(integrations.begin_batch''s answer for it, with the provider); audited; raises PT404 NOT_FOUND when the'
  ' caller cannot see the item, PT401 UNAUTHORIZED without a dashboard session. Dashboard session only.';
REVOKE ALL ON FUNCTION dashboard.begin_beneficiaries_sync(bigint, uuid, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.begin_beneficiaries_sync(bigint, uuid, text, integer) TO insurance_dashboard, insurance_app;

COMMIT;
