-- Revert insurance:dashboard_emissions from pg
-- Back to v0.9.0: its functions as they were there (CREATE OR REPLACE), without what the rework added.
-- What a dashboard session reads and does: emissions, outbox, audit log, audited retries and beneficiaries sync.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;
-- _emission_json(e, r): one emission of risk item r as the dashboard shows it, with the
-- item's uid and policy number (what a caller quotes); lastError is the newest entry of
-- error_history.
CREATE OR REPLACE FUNCTION dashboard._emission_json(_e insurance.integration_emissions, _r insurance.risk_items) RETURNS jsonb
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT jsonb_build_object(
    'id', _e.id, 'riskItemId', _e.risk_item_id, 'riskItemUid', _r.uid, 'policyUid', _r.policy_uid,
    'provider', _e.provider, 'event', _e.event,
    'status', _e.status, 'attempts', _e.attempts, 'nextRetryAt', _e.next_retry_at,
    'lastError', _e.error_history -> -1, 'externalId', _e.external_id,
    'createdAt', _e.created_at, 'updatedAt', _e.updated_at);
END;
COMMENT ON FUNCTION dashboard._emission_json(insurance.integration_emissions, insurance.risk_items) IS
  'One emission _e of risk item _r as the dashboard shows it (riskItemUid, policyUid; lastError: the newest '
  'error_history entry). Inlined; dashboard role.';
-- _risk_item_context(id): what the back-office shows beside a risk item and the dashboard
-- role may not read itself (packages and channels hold no dashboard policy; a channel row
-- holds its key hash): {package {id, uid, name}, channel {id, name} | null, beneficiaries[]}.
CREATE OR REPLACE FUNCTION dashboard._risk_item_context(_risk_item_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  -- plpgsql, not SQL: a SQL function with a SET clause is planned again at every call, a
  -- plpgsql body keeps its plan for the session (tRPC byRiskItem calls it every time).
  RETURN (
    SELECT pg_catalog.jsonb_build_object(
             'package', pg_catalog.jsonb_build_object('id', p.id, 'uid', p.uid, 'name', p.name),
             'channel', CASE WHEN c.id IS NULL THEN NULL ELSE pg_catalog.jsonb_build_object('id', c.id, 'name', c.name) END,
             'beneficiaries', coalesce((SELECT pg_catalog.jsonb_agg(insurance.beneficiary_json(b) ORDER BY b.is_holder DESC, b.id)
                                          FROM insurance.beneficiaries b WHERE b.risk_item_id = r.id), '[]'))
      FROM insurance.risk_items r
      JOIN insurance.packages p ON p.id = r.package_id
      LEFT JOIN insurance.channels c ON c.id = r.channel_id
     WHERE r.id = _risk_item_id);
END
$$;
COMMENT ON FUNCTION dashboard._risk_item_context(bigint) IS
  'The package {id, uid, name}, channel {id, name} (null: made by an operator) and beneficiaries of risk item '
  '_risk_item_id, for risk_item_emissions (which has checked the dashboard role). Owner-run helper.';
REVOKE ALL ON FUNCTION dashboard._risk_item_context(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._risk_item_context(bigint) TO insurance_dashboard;
-- risk_item_emissions(id, uid): {riskItem, emissions[]} (emissions oldest first) of the item named by id or uid;
-- PT404 NOT_FOUND for a risk item the caller cannot see.
CREATE OR REPLACE FUNCTION dashboard.risk_item_emissions(_id bigint, _uid uuid DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _r insurance.risk_items;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
  SELECT * INTO _r FROM insurance.risk_items r
   WHERE (_id IS NOT NULL OR _uid IS NOT NULL)
     AND (_id IS NULL OR r.id = _id) AND (_uid IS NULL OR r.uid = _uid);
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'NOT_FOUND';
  END IF;
  RETURN jsonb_build_object(
    'riskItem', jsonb_build_object('id', _r.id, 'uid', _r.uid, 'policyUid', _r.policy_uid, 'packageId', _r.package_id,
                                   'status', _r.status, 'variant', _r.variant, 'integration', _r.metadata -> 'integration',
                                   'createdAt', _r.created_at)
                || dashboard._risk_item_context(_r.id),
    'emissions', coalesce(
      (SELECT jsonb_agg(dashboard._emission_json(e, _r) ORDER BY e.id)
         FROM insurance.integration_emissions e WHERE e.risk_item_id = _r.id), '[]'));
END
$$;
COMMENT ON FUNCTION dashboard.risk_item_emissions(bigint, uuid) IS
  '{riskItem (with its package {id, uid, name}, channel {id, name} or null, beneficiaries), emissions '
  '(oldest first, each with riskItemUid and policyUid)} of the risk item named by id _id or uid _uid (both: '
  'the same item); raises PT404 NOT_FOUND when the caller cannot see it. Dashboard role (the back-office '
  'page and tRPC).';
REVOKE ALL ON FUNCTION dashboard._emission_json(insurance.integration_emissions, insurance.risk_items) FROM PUBLIC;
REVOKE ALL ON FUNCTION dashboard.risk_item_emissions(bigint, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._emission_json(insurance.integration_emissions, insurance.risk_items) TO insurance_dashboard;
GRANT EXECUTE ON FUNCTION dashboard.risk_item_emissions(bigint, uuid) TO insurance_dashboard, insurance_app;
-- list_emissions(statuses, provider, event, since, until, after_id, limit): one page of
-- emissions, newest first, filtered by status (any of), provider, event and last change
-- (updated_at in [since, until)); keyset pagination on id: {items[], nextCursor} where
-- nextCursor is the after_id of the next page, or NULL on the last one.
-- A status filter reads each status's newest rows through (status, id DESC), one status at a
-- time, and merges them (PostgreSQL 15 gives no ordered index scan for `= ANY`, and reading by
-- id until a page of a rare status is full reads the table: DESIGN.md §7, issue 23).
-- Planned once per session (force_generic_plan: left to the plan cache, the status query was
-- planned again on every call, which doubled its cost), and enable_sort = off: the dashboard's
-- policy compares claims the planner cannot see, which it estimates at 0.5% of the rows; it
-- then believes a status has a few rows and sorts all of them instead of reading 51 in id
-- order (a generic plan cannot take the partial due index of FAILED rows either).
CREATE OR REPLACE FUNCTION dashboard.list_emissions(_statuses text[], _provider text, _event text, _since timestamptz,
                                         _until timestamptz, _after_id bigint, _limit integer) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' SET plan_cache_mode = force_generic_plan SET enable_sort = off AS $$
DECLARE
  _rows insurance.integration_emissions[];
  _ids bigint[] := '{}';
  _status text;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
  IF _limit IS NULL OR _limit NOT BETWEEN 1 AND 100 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'limit must be between 1 and 100', DETAIL = 'BAD_REQUEST';
  END IF;
  IF _statuses IS NULL THEN
    SELECT array_agg(e ORDER BY e.id DESC) INTO _rows
      FROM (SELECT * FROM insurance.integration_emissions e
             WHERE (_provider IS NULL OR e.provider = _provider)
               AND (_event IS NULL OR e.event = _event)
               AND (_since IS NULL OR e.updated_at >= _since)
               AND (_until IS NULL OR e.updated_at < _until)
               AND (_after_id IS NULL OR e.id < _after_id)
             ORDER BY e.id DESC
             LIMIT _limit + 1) e;
  ELSE
    FOREACH _status IN ARRAY ARRAY(SELECT DISTINCT s FROM unnest(_statuses) AS s) LOOP
      _ids := _ids || ARRAY(SELECT e.id FROM insurance.integration_emissions e
                             WHERE e.status = _status
                               AND (_provider IS NULL OR e.provider = _provider)
                               AND (_event IS NULL OR e.event = _event)
                               AND (_since IS NULL OR e.updated_at >= _since)
                               AND (_until IS NULL OR e.updated_at < _until)
                               AND (_after_id IS NULL OR e.id < _after_id)
                             ORDER BY e.id DESC
                             LIMIT _limit + 1);
    END LOOP;
    SELECT array_agg(e ORDER BY e.id DESC) INTO _rows
      FROM (SELECT * FROM insurance.integration_emissions e WHERE e.id = ANY (_ids)
             ORDER BY e.id DESC LIMIT _limit + 1) e;
  END IF;
  RETURN jsonb_build_object(
    'items', coalesce((SELECT jsonb_agg(dashboard._emission_json(e, i) ORDER BY e.id DESC)
                         FROM unnest(_rows[1:_limit]) e JOIN insurance.risk_items i ON i.id = e.risk_item_id), '[]'),
    'nextCursor', CASE WHEN cardinality(_rows) > _limit THEN (_rows[_limit]).id::text END);
END
$$;
COMMENT ON FUNCTION dashboard.list_emissions(text[], text, text, timestamp with time zone, timestamp with time zone, bigint, integer) IS
  'One page of emissions, newest first, filtered by statuses, provider, event and updated_at in '
  '[_since, _until), keyset on id: {items, nextCursor}; raises PT400 BAD_REQUEST for a limit outside '
  '1..100. Dashboard role.';
-- emission_detail(emission_id): {emission (with errorHistory, each entry as recorded, its
-- masked requestPayload included when the pipeline stored one), riskItem, retryPending};
-- PT404 NOT_FOUND for an emission the caller cannot see.
CREATE OR REPLACE FUNCTION dashboard.emission_detail(_emission_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _e insurance.integration_emissions;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
  SELECT * INTO _e FROM insurance.integration_emissions e WHERE e.id = _emission_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'emission not found', DETAIL = 'NOT_FOUND';
  END IF;
  RETURN jsonb_build_object(
    'emission', dashboard._emission_json(_e, (SELECT r FROM insurance.risk_items r WHERE r.id = _e.risk_item_id))
                || jsonb_build_object('errorHistory', _e.error_history),
    'riskItem', (SELECT jsonb_build_object('id', r.id, 'uid', r.uid, 'policyUid', r.policy_uid,
                                           'packageId', r.package_id, 'status', r.status, 'variant', r.variant,
                                           'integration', r.metadata -> 'integration')
                   FROM insurance.risk_items r WHERE r.id = _e.risk_item_id),
    'retryPending', EXISTS (SELECT FROM outbox.http_requests o
                             WHERE o.delivered_at IS NULL AND o.body ? 'emissionId'
                               AND (o.body ->> 'emissionId')::bigint = _e.id));
END
$$;
COMMENT ON FUNCTION dashboard.emission_detail(bigint) IS
  '{emission (with errorHistory), riskItem, retryPending} of emission _emission_id; raises PT404 '
  'NOT_FOUND when the caller cannot see it. Dashboard role.';

-- retry_emissions(ids, via): the back-office's and tRPC's retry (via 'backoffice' or 'trpc'):
-- integrations.retry_from_backoffice, and one audit row 'emissions.retry' with the ids as
-- targets and the per-id outcome as details. Returns what retry_from_backoffice returns; an
-- unknown id raises PT404 and changes (and records) nothing.
CREATE OR REPLACE FUNCTION dashboard.retry_emissions(_ids bigint[], _via text) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _result jsonb;
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  IF insurance.claim('role') IS DISTINCT FROM 'dashboard' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'a dashboard session is required', DETAIL = 'UNAUTHORIZED';
  END IF;
  _result := integrations.retry_from_backoffice(_ids);
  PERFORM insurance.record_audit(dashboard._actor(), 'emissions.retry', to_jsonb(_ids), 'ok',
                                 jsonb_build_object('via', _via, 'outcome', _result));
  RETURN _result;
END
$$;
COMMENT ON FUNCTION dashboard.retry_emissions(bigint[], text) IS
  'Retries emissions _ids (FAILED and ABANDONED restart as FAILED, due now) and writes one audit row '
  'emissions.retry via _via; returns [{id, status, queued}]; raises PT404 for an unknown id (nothing '
  'changed). Dashboard session only.';
REVOKE ALL ON FUNCTION dashboard.list_emissions(text[], text, text, timestamptz, timestamptz, bigint, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION dashboard.emission_detail(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION dashboard.retry_emissions(bigint[], text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.list_emissions(text[], text, text, timestamptz, timestamptz, bigint, integer) TO insurance_dashboard, insurance_app;
GRANT EXECUTE ON FUNCTION dashboard.emission_detail(bigint) TO insurance_dashboard, insurance_app;
GRANT EXECUTE ON FUNCTION dashboard.retry_emissions(bigint[], text) TO insurance_dashboard, insurance_app;
-- What the rework added (after _emission_json no longer refers to _emission_state).
DROP FUNCTION dashboard.retry_matching(text[], text, text, timestamptz, timestamptz, integer, boolean, text);
DROP FUNCTION dashboard.emissions_overview(text[], text, text, timestamptz, timestamptz, bigint, integer);
DROP FUNCTION dashboard.emission_counts();
DROP FUNCTION dashboard.emission_state(bigint);
DROP FUNCTION dashboard._emission_webhooks(bigint[]);
DROP FUNCTION dashboard._channel_json(uuid);
DROP FUNCTION dashboard._in_progress_ids();
DROP FUNCTION dashboard._emission_state(insurance.integration_emissions);
COMMIT;
