-- Deploy insurance:dashboard_access to pg
-- requires: dashboard_access@v1.0
-- requires: audit_log
-- requires: entry_point_roles
-- requires: outbox_functions
-- requires: emission_state_machine
-- What a back-office user reads and does, through tRPC (/api/trpc) and the back-office page
-- (/backoffice). Reads run as insurance_dashboard under its policies; the two mutations are
-- SECURITY DEFINER entry points that check the role, act, and write the audit row (actor: the
-- session's e-mail) in the same transaction. The app no longer calls
-- integrations.retry_from_backoffice itself (its EXECUTE grant stays: emission_state_machine's
-- verify asserts it; revoke it when that change is reworked).
BEGIN;
SET LOCAL ROLE insurance_owner;

-- list_emissions gains the event filter; one signature, so tRPC and the page share it.
DROP FUNCTION dashboard.list_emissions(text[], text, timestamptz, timestamptz, bigint, integer);

-- The back-office lists the outbox (it had SELECT on the table, not USAGE on its schema).
GRANT USAGE ON SCHEMA outbox TO insurance_dashboard;

-- The back-office filters by event too.
CREATE INDEX integration_emissions_event_id_idx ON insurance.integration_emissions (event, id DESC);

-- list_emissions(statuses, provider, event, since, until, after_id, limit): one page of
-- emissions, newest first, filtered by status (any of), provider, event and last change
-- (updated_at in [since, until)); keyset pagination on id: {items[], nextCursor} where
-- nextCursor is the after_id of the next page, or NULL on the last one.
CREATE FUNCTION dashboard.list_emissions(_statuses text[], _provider text, _event text, _since timestamptz,
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
             AND (_event IS NULL OR e.event = _event)
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

-- emission_detail(emission_id): {emission (with errorHistory, each entry as recorded, its
-- masked requestPayload included when the pipeline stored one), riskItem, retryPending};
-- PT404 NOT_FOUND for an emission the caller cannot see.
CREATE FUNCTION dashboard.emission_detail(_emission_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _e insurance.integration_emissions;
BEGIN
  SELECT * INTO _e FROM insurance.integration_emissions e WHERE e.id = _emission_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'emission not found', DETAIL = 'NOT_FOUND';
  END IF;
  RETURN jsonb_build_object(
    'emission', dashboard._emission_json(_e) || jsonb_build_object('errorHistory', _e.error_history),
    'riskItem', (SELECT jsonb_build_object('id', r.id, 'uid', r.uid, 'policyUid', r.policy_uid,
                                           'packageId', r.package_id, 'status', r.status, 'variant', r.variant,
                                           'integration', r.metadata -> 'integration')
                   FROM insurance.risk_items r WHERE r.id = _e.risk_item_id),
    'retryPending', EXISTS (SELECT FROM outbox.http_requests o
                             WHERE o.delivered_at IS NULL AND o.body ? 'emissionId'
                               AND (o.body ->> 'emissionId')::bigint = _e.id));
END
$$;

-- _outbox_url(url): where a row goes, without what may be a secret (a webhook's path, a query).
CREATE FUNCTION dashboard._outbox_url(_url text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
  SELECT CASE WHEN _url LIKE '/%' THEN _url
              ELSE coalesce(substring(_url FROM '^(https?://[^/?#]+)'), '') || '/…' END
$$;

-- list_outbox(dead, after_id, limit): outbox rows not delivered, oldest first, in keyset pages
-- on id: the live ones (dead false) or the dead letters (dead true). {items[{id, url,
-- emissionId, attempts, deliverAfter, deadAt, leased, lastStatus, lastError, createdAt}], nextCursor}.
CREATE FUNCTION dashboard.list_outbox(_dead boolean, _after_id bigint, _limit integer) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _rows jsonb;
BEGIN
  IF _limit IS NULL OR _limit NOT BETWEEN 1 AND 100 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'limit must be between 1 and 100', DETAIL = 'BAD_REQUEST';
  END IF;
  SELECT jsonb_agg(jsonb_build_object(
           'id', o.id, 'url', dashboard._outbox_url(o.url), 'emissionId', o.body -> 'emissionId',
           'attempts', o.attempts, 'deliverAfter', o.deliver_after, 'deadAt', o.dead_at,
           'leased', o.lease_until > pg_catalog.now(), 'lastStatus', o.last_status,
           'lastError', left(o.last_error, 300), 'createdAt', o.created_at) ORDER BY o.id)
    INTO _rows
    FROM (SELECT * FROM outbox.http_requests o
           WHERE o.delivered_at IS NULL AND (o.dead_at IS NOT NULL) = coalesce(_dead, false)
             AND (_after_id IS NULL OR o.id > _after_id)
           ORDER BY o.id LIMIT _limit + 1) o;
  RETURN jsonb_build_object(
    'items', coalesce((SELECT jsonb_agg(x) FROM jsonb_array_elements(_rows) WITH ORDINALITY a(x, n) WHERE n <= _limit), '[]'),
    'nextCursor', CASE WHEN jsonb_array_length(coalesce(_rows, '[]')) > _limit
                       THEN (_rows -> (_limit - 1) ->> 'id') END);
END
$$;

-- list_audit(before_id, limit): the audit log, newest first, in keyset pages on id:
-- {items[{id, at, actor, action, targets, result, details}], nextCursor}.
CREATE FUNCTION dashboard.list_audit(_before_id bigint, _limit integer) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _rows jsonb;
BEGIN
  IF _limit IS NULL OR _limit NOT BETWEEN 1 AND 100 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'limit must be between 1 and 100', DETAIL = 'BAD_REQUEST';
  END IF;
  SELECT jsonb_agg(to_jsonb(a) ORDER BY a.id DESC) INTO _rows
    FROM (SELECT a.id, a.at, a.actor, a.action, a.targets, a.result, a.details FROM insurance.audit_log a
           WHERE _before_id IS NULL OR a.id < _before_id ORDER BY a.id DESC LIMIT _limit + 1) a;
  RETURN jsonb_build_object(
    'items', coalesce((SELECT jsonb_agg(x) FROM jsonb_array_elements(_rows) WITH ORDINALITY a(x, n) WHERE n <= _limit), '[]'),
    'nextCursor', CASE WHEN jsonb_array_length(coalesce(_rows, '[]')) > _limit
                       THEN (_rows -> (_limit - 1) ->> 'id') END);
END
$$;
-- Keyset pages on id (the log's own index orders by time).
CREATE INDEX audit_log_id_desc_idx ON insurance.audit_log (id DESC);

-- _actor(): who is acting, from the session's claims ('dashboard:<email>').
CREATE FUNCTION dashboard._actor() RETURNS text
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT 'dashboard:' || coalesce(insurance.claim('email'), 'user-' || insurance.claim('sub'))
$$;

-- retry_emissions(ids, via): the back-office's and tRPC's retry (via 'backoffice' or 'trpc'):
-- integrations.retry_from_backoffice, and one audit row 'emissions.retry' with the ids as
-- targets and the per-id outcome as details. Returns what retry_from_backoffice returns; an
-- unknown id raises PT404 and changes (and records) nothing.
CREATE FUNCTION dashboard.retry_emissions(_ids bigint[], _via text) RETURNS jsonb
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

-- retry_outbox(ids): the back-office's retry of outbox rows, live or dead: due now, attempts
-- from zero (outbox.retry_requests, which writes the audit row 'outbox.retry' with the
-- session's user as actor). Returns [{id, result}], result queued, delivered or not_found.
CREATE FUNCTION dashboard.retry_outbox(_ids bigint[]) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  IF insurance.claim('role') IS DISTINCT FROM 'dashboard' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'a dashboard session is required', DETAIL = 'UNAUTHORIZED';
  END IF;
  RETURN outbox.retry_requests(dashboard._actor(), _ids);
END
$$;

REVOKE ALL ON FUNCTION dashboard.list_emissions(text[], text, text, timestamptz, timestamptz, bigint, integer),
  dashboard.emission_detail(bigint), dashboard._outbox_url(text), dashboard.list_outbox(boolean, bigint, integer),
  dashboard.list_audit(bigint, integer), dashboard._actor(), dashboard.retry_emissions(bigint[], text),
  dashboard.retry_outbox(bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._outbox_url(text), dashboard._actor() TO insurance_dashboard;
GRANT EXECUTE ON FUNCTION dashboard.list_emissions(text[], text, text, timestamptz, timestamptz, bigint, integer),
  dashboard.emission_detail(bigint), dashboard.list_outbox(boolean, bigint, integer), dashboard.list_audit(bigint, integer),
  dashboard.retry_emissions(bigint[], text), dashboard.retry_outbox(bigint[])
  TO insurance_dashboard, insurance_app;

COMMIT;
