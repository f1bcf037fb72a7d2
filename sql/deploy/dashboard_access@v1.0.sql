-- Deploy insurance:dashboard_access to pg
-- requires: dashboard_sessions_functions
-- requires: integration_emissions
-- requires: risk_items
-- What a back-office user reads through the dashboard's typed RPC (/api/trpc). The app
-- calls these as insurance_dashboard with the claims of a live session ({sub: user id,
-- role: dashboard}, see dashboard.session_claims); without them the policies show nothing.
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE POLICY integration_emissions_select_dashboard ON insurance.integration_emissions
  FOR SELECT TO insurance_dashboard
  USING ((SELECT insurance.claim('role')) = 'dashboard' AND (SELECT insurance.claim('sub')) IS NOT NULL);
CREATE POLICY risk_items_select_dashboard ON insurance.risk_items
  FOR SELECT TO insurance_dashboard
  USING ((SELECT insurance.claim('role')) = 'dashboard' AND (SELECT insurance.claim('sub')) IS NOT NULL);

-- The list filters by status and provider and pages by id, newest first.
CREATE INDEX integration_emissions_status_id_idx ON insurance.integration_emissions (status, id DESC);

-- _emission_json(e): one emission as the dashboard shows it; lastError is the newest entry
-- of error_history.
CREATE FUNCTION dashboard._emission_json(_e insurance.integration_emissions) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT jsonb_build_object(
    'id', _e.id, 'riskItemId', _e.risk_item_id, 'provider', _e.provider, 'event', _e.event,
    'status', _e.status, 'attempts', _e.attempts, 'nextRetryAt', _e.next_retry_at,
    'lastError', _e.error_history -> -1, 'externalId', _e.external_id,
    'createdAt', _e.created_at, 'updatedAt', _e.updated_at)
$$;

-- emissions_by_risk_item(risk_item_id): {riskItem, emissions[]} (emissions oldest first);
-- PT404 NOT_FOUND for a risk item the caller cannot see.
CREATE FUNCTION dashboard.emissions_by_risk_item(_risk_item_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _item jsonb;
BEGIN
  SELECT jsonb_build_object('id', r.id, 'uid', r.uid, 'policyUid', r.policy_uid, 'packageId', r.package_id,
                            'status', r.status, 'variant', r.variant, 'integration', r.metadata -> 'integration')
    INTO _item
    FROM insurance.risk_items r WHERE r.id = _risk_item_id;
  IF _item IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'NOT_FOUND';
  END IF;
  RETURN jsonb_build_object('riskItem', _item, 'emissions', coalesce(
    (SELECT jsonb_agg(dashboard._emission_json(e) ORDER BY e.id)
       FROM insurance.integration_emissions e WHERE e.risk_item_id = _risk_item_id), '[]'));
END
$$;

-- list_emissions(statuses, provider, since, until, after_id, limit): one page of emissions,
-- newest first, filtered by status (any of), provider and last change (updated_at in
-- [since, until)); keyset pagination on id: {items[], nextCursor} where nextCursor is the
-- after_id of the next page, or NULL on the last one.
CREATE FUNCTION dashboard.list_emissions(_statuses text[], _provider text, _since timestamptz,
                                         _until timestamptz, _after_id bigint, _limit integer) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _rows insurance.integration_emissions[];
BEGIN
  IF _limit IS NULL OR _limit NOT BETWEEN 1 AND 100 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'limit must be between 1 and 100', DETAIL = 'BAD_REQUEST';
  END IF;
  SELECT array_agg(e ORDER BY e.id DESC) INTO _rows
    FROM (SELECT * FROM insurance.integration_emissions e
           WHERE (_statuses IS NULL OR e.status = ANY (_statuses))
             AND (_provider IS NULL OR e.provider = _provider)
             AND (_since IS NULL OR e.updated_at >= _since)
             AND (_until IS NULL OR e.updated_at < _until)
             AND (_after_id IS NULL OR e.id < _after_id)
           ORDER BY e.id DESC
           LIMIT _limit + 1) e;
  RETURN jsonb_build_object(
    'items', coalesce((SELECT jsonb_agg(dashboard._emission_json(r) ORDER BY r.id DESC)
                         FROM unnest(_rows[1:_limit]) r), '[]'),
    'nextCursor', CASE WHEN cardinality(_rows) > _limit THEN (_rows[_limit]).id::text END);
END
$$;

-- post_sales_target(risk_item_id): {riskItemId, provider} where provider is the package's
-- post_sales_integration_slug (NULL: nothing to sync); PT404 NOT_FOUND for an unknown item.
CREATE FUNCTION dashboard.post_sales_target(_risk_item_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _target jsonb;
BEGIN
  SELECT jsonb_build_object('riskItemId', r.id, 'provider', p.post_sales_integration_slug) INTO _target
    FROM insurance.risk_items r JOIN insurance.packages p ON p.id = r.package_id
   WHERE r.id = _risk_item_id;
  IF _target IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'NOT_FOUND';
  END IF;
  RETURN _target;
END
$$;

REVOKE ALL ON FUNCTION dashboard._emission_json(insurance.integration_emissions),
  dashboard.emissions_by_risk_item(bigint),
  dashboard.list_emissions(text[], text, timestamptz, timestamptz, bigint, integer),
  dashboard.post_sales_target(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._emission_json(insurance.integration_emissions) TO insurance_dashboard;
GRANT EXECUTE ON FUNCTION dashboard.emissions_by_risk_item(bigint),
  dashboard.list_emissions(text[], text, timestamptz, timestamptz, bigint, integer),
  dashboard.post_sales_target(bigint) TO insurance_dashboard, insurance_app;

COMMIT;
