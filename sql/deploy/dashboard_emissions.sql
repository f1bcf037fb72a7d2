-- Deploy insurance:dashboard_emissions to pg
-- The back-office emissions page: an item's emissions, the list, its counts and live state, a detail,
-- audited retries. CREATE OR REPLACE: it runs over the released functions.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- _paused_providers(): the providers paused now (insurance.provider_pauses: a handful of rows).
CREATE OR REPLACE FUNCTION dashboard._paused_providers() RETURNS text[]
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
BEGIN
  RETURN ARRAY(SELECT z.provider FROM insurance.provider_pauses z
                WHERE z.until IS NULL OR z.until > pg_catalog.now() ORDER BY z.provider);
END
$$;
COMMENT ON FUNCTION dashboard._paused_providers() IS
  'The providers paused now (insurance.provider_pauses in force), by code. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard._paused_providers() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._paused_providers() TO insurance_dashboard;

-- _emission_state(e, claimed, paused): where emission e stands, as every surface names it (the
-- badge, the counts, the filters, tRPC), exactly one of:
--   SUCCESS       the insurer took it (final)
--   IN_PROGRESS   a worker holds its key now (_claimed: a live claim) and calls the insurer
--   ABANDONED     given up; waits for an operator's retry
--   PAUSED        FAILED, its provider paused (_paused): waits, spending no attempt
--   RETRY_QUEUED  FAILED and due: waiting for the worker (by the backoff or an operator)
--   FAILED        FAILED, its next retry later (next_retry_at)
-- Inlined into the caller's plan (no SET clause, no subquery).
CREATE OR REPLACE FUNCTION dashboard._emission_state(_e insurance.integration_emissions, _claimed boolean,
                                                     _paused boolean) RETURNS text
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT CASE WHEN _e.status = 'SUCCESS' THEN 'SUCCESS'
              WHEN _claimed THEN 'IN_PROGRESS'
              WHEN _e.status = 'ABANDONED' THEN 'ABANDONED'
              WHEN _paused THEN 'PAUSED'
              WHEN _e.next_retry_at <= pg_catalog.now() THEN 'RETRY_QUEUED'
              ELSE 'FAILED' END;
END;
COMMENT ON FUNCTION dashboard._emission_state(insurance.integration_emissions, boolean, boolean) IS
  'The one state of emission _e whose key is (_claimed) or is not claimed now and whose provider is (_paused) or is '
  'not paused: SUCCESS, IN_PROGRESS, ABANDONED, PAUSED, RETRY_QUEUED (FAILED and due) or FAILED (its next retry '
  'later). Inlined; dashboard role.';
REVOKE ALL ON FUNCTION dashboard._emission_state(insurance.integration_emissions, boolean, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._emission_state(insurance.integration_emissions, boolean, boolean) TO insurance_dashboard;

-- _emission_state(e, claimed): the same, the pause read for e's provider (the risk item's page).
CREATE OR REPLACE FUNCTION dashboard._emission_state(_e insurance.integration_emissions, _claimed boolean) RETURNS text
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT dashboard._emission_state(_e, _claimed, _e.provider = ANY (dashboard._paused_providers()));
END;
COMMENT ON FUNCTION dashboard._emission_state(insurance.integration_emissions, boolean) IS
  'The state (dashboard._emission_state(e, claimed, paused)) of emission _e whose key is (_claimed) or is not claimed '
  'now, its provider''s pause read. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard._emission_state(insurance.integration_emissions, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._emission_state(insurance.integration_emissions, boolean) TO insurance_dashboard;

-- _emission_state(e): the same for a caller that may not read the claims (the dashboard role):
-- owner-run, one primary-key probe and the pauses.
CREATE OR REPLACE FUNCTION dashboard._emission_state(_e insurance.integration_emissions) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  RETURN dashboard._emission_state(_e, EXISTS (
           SELECT FROM insurance.emission_claims c
            WHERE c.risk_item_id = _e.risk_item_id AND c.provider = _e.provider AND c.event = _e.event
              AND c.lease_until > pg_catalog.now()), _e.provider = ANY (dashboard._paused_providers()));
END
$$;
COMMENT ON FUNCTION dashboard._emission_state(insurance.integration_emissions) IS
  'The state (dashboard._emission_state(e, claimed, paused)) of emission _e, its claim and its provider''s pause '
  'read. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard._emission_state(insurance.integration_emissions) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._emission_state(insurance.integration_emissions) TO insurance_dashboard;

-- _in_progress_ids(): the emissions whose key a worker holds now (live claims: as many as the
-- workers' batches, never the table).
CREATE OR REPLACE FUNCTION dashboard._in_progress_ids() RETURNS bigint[]
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  RETURN ARRAY(SELECT e.id FROM insurance.emission_claims c
                 JOIN insurance.integration_emissions e
                   ON e.risk_item_id = c.risk_item_id AND e.provider = c.provider AND e.event = c.event
                WHERE c.lease_until > pg_catalog.now() AND e.status <> 'SUCCESS');
END
$$;
COMMENT ON FUNCTION dashboard._in_progress_ids() IS
  'The ids of the emissions whose key is claimed now (a worker is calling the insurer). Dashboard role.';
REVOKE ALL ON FUNCTION dashboard._in_progress_ids() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._in_progress_ids() TO insurance_dashboard;

-- _channel_json(id): {id, name} of a partner channel (the dashboard role does not read the
-- channels: a row holds its key hash), or NULL.
CREATE OR REPLACE FUNCTION dashboard._channel_json(_id uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  RETURN (SELECT pg_catalog.jsonb_build_object('id', c.id, 'name', c.name) FROM insurance.channels c WHERE c.id = _id);
END
$$;
COMMENT ON FUNCTION dashboard._channel_json(uuid) IS
  '{id, name} of channel _id, or NULL (no id, or no such channel). Dashboard role.';
REVOKE ALL ON FUNCTION dashboard._channel_json(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._channel_json(uuid) TO insurance_dashboard;

-- _emission_webhooks(ids): every partner webhook delivery of the emissions ids, oldest first,
-- as the partner sees it (webhooks._delivery_json) with the emission's id and the last error:
-- what the partner heard. Through http_requests_webhook_emission_idx; delivered rows live
-- OUTBOX_RETENTION.
CREATE OR REPLACE FUNCTION dashboard._emission_webhooks(_ids bigint[]) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  RETURN coalesce((
    SELECT pg_catalog.jsonb_agg(webhooks._delivery_json(o) || pg_catalog.jsonb_build_object(
             'emissionId', (o.body #>> '{data,emissionId}')::bigint, 'lastError', pg_catalog.left(o.last_error, 300))
           ORDER BY o.id)
      FROM outbox.http_requests o
     WHERE o.channel_id IS NOT NULL AND (o.body #>> '{data,emissionId}')::bigint = ANY (_ids)), '[]');
END
$$;
COMMENT ON FUNCTION dashboard._emission_webhooks(bigint[]) IS
  'Every partner webhook delivery of the emissions _ids, oldest first: [{id, eventId, type, url, status (pending, '
  'failing, delivered, dead), attempts, lastHttpStatus, lastError, nextTryAt, deliveredAt, createdAt, emissionId}]. '
  'Dashboard role.';
REVOKE ALL ON FUNCTION dashboard._emission_webhooks(bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._emission_webhooks(bigint[]) TO insurance_dashboard;

-- emission_state(id): {id, state, status, attempts} of one emission: what its page follows
-- while it is not settled; PT404 NOT_FOUND for an emission the caller cannot see.
CREATE OR REPLACE FUNCTION dashboard.emission_state(_emission_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _e insurance.integration_emissions;
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  SELECT * INTO _e FROM insurance.integration_emissions e WHERE e.id = _emission_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'emission not found', DETAIL = 'NOT_FOUND';
  END IF;
  RETURN pg_catalog.jsonb_build_object('id', _e.id, 'state', dashboard._emission_state(_e), 'status', _e.status,
                                       'attempts', _e.attempts);
END
$$;
COMMENT ON FUNCTION dashboard.emission_state(bigint) IS
  '{id, state (SUCCESS, IN_PROGRESS, ABANDONED, PAUSED, RETRY_QUEUED, FAILED), status, attempts} of emission _emission_id; '
  'raises PT404 NOT_FOUND when the caller cannot see it. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.emission_state(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.emission_state(bigint) TO insurance_dashboard, insurance_app;

-- emission_counts(): how many emissions are in each state (dashboard._emission_state), the
-- states adding up to the total: {SUCCESS, IN_PROGRESS, ABANDONED, PAUSED, RETRY_QUEUED, FAILED,
-- total}. One statement, so one snapshot: the kept counts per (status, provider) with their
-- unfolded deltas (emission_counts), the live claims (IN_PROGRESS, taken from their status's
-- count), the paused providers' FAILED counts (PAUSED), the due FAILED rows of the others (the
-- partial due index, as far as the backlog goes: RETRY_QUEUED); FAILED is what is left of its
-- status. Never a scan of the emissions.
CREATE OR REPLACE FUNCTION dashboard.emission_counts() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _counts jsonb;
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  PERFORM insurance.fold_emission_counts();  -- keeps the deltas read below few
  WITH kept AS (
    SELECT k.status, k.provider, sum(k.count) AS count
      FROM (SELECT c.status, c.provider, c.count FROM insurance.emission_counts c
            UNION ALL
            SELECT d.status, d.provider, d.delta FROM insurance.emission_count_deltas d) k
     GROUP BY k.status, k.provider
  ), paused AS (
    SELECT z.provider FROM insurance.provider_pauses z WHERE z.until IS NULL OR z.until > pg_catalog.now()
  ), busy AS (
    SELECT e.status, e.provider IN (SELECT p.provider FROM paused p) AS paused
      FROM insurance.emission_claims c
      JOIN insurance.integration_emissions e
        ON e.risk_item_id = c.risk_item_id AND e.provider = c.provider AND e.event = c.event
     WHERE c.lease_until > pg_catalog.now() AND e.status <> 'SUCCESS'
  ), queued AS (
    SELECT pg_catalog.count(*) AS n
      FROM insurance.integration_emissions e
     WHERE e.status = 'FAILED' AND e.next_retry_at <= pg_catalog.now()
       AND e.provider NOT IN (SELECT p.provider FROM paused p)
       AND NOT EXISTS (SELECT FROM insurance.emission_claims c
                        WHERE c.risk_item_id = e.risk_item_id AND c.provider = e.provider AND c.event = e.event
                          AND c.lease_until > pg_catalog.now())
  ), sums AS (
    SELECT coalesce(sum(k.count) FILTER (WHERE k.status = 'SUCCESS'), 0) AS success,
           coalesce(sum(k.count) FILTER (WHERE k.status = 'ABANDONED'), 0) AS abandoned,
           coalesce(sum(k.count) FILTER (WHERE k.status = 'FAILED' AND k.provider IN (SELECT p.provider FROM paused p)), 0)
             AS failed_paused,
           coalesce(sum(k.count) FILTER (WHERE k.status = 'FAILED' AND k.provider NOT IN (SELECT p.provider FROM paused p)), 0)
             AS failed_running,
           coalesce(sum(k.count), 0) AS total
      FROM kept k
  ), claimed AS (
    SELECT pg_catalog.count(*) AS n,
           pg_catalog.count(*) FILTER (WHERE b.status = 'ABANDONED') AS abandoned,
           pg_catalog.count(*) FILTER (WHERE b.status = 'FAILED' AND b.paused) AS failed_paused,
           pg_catalog.count(*) FILTER (WHERE b.status = 'FAILED' AND NOT b.paused) AS failed_running
      FROM busy b
  )
  SELECT pg_catalog.jsonb_build_object(
           'SUCCESS', s.success, 'IN_PROGRESS', c.n, 'ABANDONED', s.abandoned - c.abandoned,
           'PAUSED', s.failed_paused - c.failed_paused, 'RETRY_QUEUED', q.n,
           'FAILED', s.failed_running - c.failed_running - q.n, 'total', s.total)
    INTO _counts
    FROM sums s, claimed c, queued q;
  RETURN _counts;
END
$$;
COMMENT ON FUNCTION dashboard.emission_counts() IS
  'Emissions per state (dashboard._emission_state), adding up to the total, read in one snapshot: {SUCCESS, '
  'IN_PROGRESS, ABANDONED, PAUSED, RETRY_QUEUED, FAILED, total}; each equals what dashboard.list_emissions lists '
  'for that state. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.emission_counts() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.emission_counts() TO insurance_dashboard, insurance_app;

-- emissions_overview(filters..., after_id, limit): the back-office's emissions page in one
-- call: list_emissions' page (what tRPC's list answers) with the counts per state and the
-- providers paused now (integrations.paused_providers).
CREATE OR REPLACE FUNCTION dashboard.emissions_overview(_statuses text[], _provider text, _event text, _since timestamptz,
                                             _until timestamptz, _after_id bigint, _limit integer) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  RETURN dashboard.list_emissions(_statuses, _provider, _event, _since, _until, _after_id, _limit)
         || pg_catalog.jsonb_build_object('counts', dashboard.emission_counts(),
                                          'paused', integrations.paused_providers());
END
$$;
COMMENT ON FUNCTION dashboard.emissions_overview(text[], text, text, timestamptz, timestamptz, bigint, integer) IS
  'dashboard.list_emissions'' page {items, nextCursor} with counts (dashboard.emission_counts) and paused '
  '({provider: {pausedAt, until}}, integrations.paused_providers). Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.emissions_overview(text[], text, text, timestamptz, timestamptz, bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.emissions_overview(text[], text, text, timestamptz, timestamptz, bigint, integer)
  TO insurance_dashboard, insurance_app;

-- retry_matching(filters..., max, dry_run, via): "retry every row that matches": the FAILED and
-- ABANDONED emissions that the filters match (a state filter as dashboard._emission_state says
-- it; SUCCESS and IN_PROGRESS match none), newest first, at most _max, restarted as
-- integrations.retry_from_backoffice restarts them, with ONE audit row emissions.retry_all
-- (targets: every id; details: via, the filters, how many). _dry_run: how many would be, and
-- nothing changed or recorded. {matched (at most _max), capped (more matched), queued}.
CREATE OR REPLACE FUNCTION dashboard.retry_matching(_statuses text[], _provider text, _event text, _since timestamptz,
                                         _until timestamptz, _max integer, _dry_run boolean, _via text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _busy bigint[];
  _paused text[] := ARRAY(SELECT z.provider FROM insurance.provider_pauses z
                           WHERE z.until IS NULL OR z.until > pg_catalog.now());
  _ids bigint[];
  _capped boolean;
  _result jsonb;
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  IF insurance.claim('role') IS DISTINCT FROM 'dashboard' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'a dashboard session is required', DETAIL = 'UNAUTHORIZED';
  END IF;
  IF _max IS NULL OR _max NOT BETWEEN 1 AND 1000 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'max must be between 1 and 1000', DETAIL = 'BAD_REQUEST';
  END IF;
  _busy := dashboard._in_progress_ids();
  _ids := ARRAY(SELECT e.id FROM insurance.integration_emissions e
                 WHERE e.status IN ('FAILED', 'ABANDONED')
                   AND (_statuses IS NULL
                        OR dashboard._emission_state(e, false, e.provider = ANY (_paused)) = ANY (_statuses))
                   AND (_provider IS NULL OR e.provider = _provider)
                   AND (_event IS NULL OR e.event = _event)
                   AND (_since IS NULL OR e.updated_at >= _since)
                   AND (_until IS NULL OR e.updated_at < _until)
                   AND NOT (e.id = ANY (_busy))
                 ORDER BY e.id DESC LIMIT _max + 1);
  _capped := pg_catalog.cardinality(_ids) > _max;
  _ids := _ids[1:_max];
  IF _dry_run OR pg_catalog.cardinality(_ids) = 0 THEN
    RETURN pg_catalog.jsonb_build_object('matched', pg_catalog.cardinality(_ids), 'capped', _capped, 'queued', 0);
  END IF;
  _result := integrations.retry_from_backoffice(_ids);
  _result := pg_catalog.jsonb_build_object(
    'matched', pg_catalog.cardinality(_ids), 'capped', _capped,
    'queued', (SELECT pg_catalog.count(*) FROM pg_catalog.jsonb_array_elements(_result) r WHERE (r ->> 'queued')::boolean));
  PERFORM insurance.record_audit(dashboard._actor(), 'emissions.retry_all', pg_catalog.to_jsonb(_ids), 'ok',
            _result || pg_catalog.jsonb_build_object('via', _via, 'max', _max, 'filters', pg_catalog.jsonb_strip_nulls(
              pg_catalog.jsonb_build_object('statuses', _statuses, 'provider', _provider, 'event', _event,
                                            'since', _since, 'until', _until))));
  RETURN _result;
END
$$;
COMMENT ON FUNCTION dashboard.retry_matching(text[], text, text, timestamptz, timestamptz, integer, boolean, text) IS
  'Retries the FAILED and ABANDONED emissions the filters match (newest first, at most _max, none in progress) with '
  'one audit row emissions.retry_all via _via; _dry_run only counts. Returns {matched, capped, queued}; raises PT400 '
  'for _max outside 1..1000. Dashboard session only.';
REVOKE ALL ON FUNCTION dashboard.retry_matching(text[], text, text, timestamptz, timestamptz, integer, boolean, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.retry_matching(text[], text, text, timestamptz, timestamptz, integer, boolean, text)
  TO insurance_dashboard, insurance_app;

-- _emission_json(e, r, state): one emission of risk item r as the dashboard shows it, with the
-- item's uid and policy number (what a caller quotes) and its state (_emission_state); lastError
-- is the newest entry of error_history.
CREATE OR REPLACE FUNCTION dashboard._emission_json(_e insurance.integration_emissions, _r insurance.risk_items,
                                                    _state text) RETURNS jsonb
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT jsonb_build_object(
    'id', _e.id, 'riskItemId', _e.risk_item_id, 'riskItemUid', _r.uid, 'policyUid', _r.policy_uid,
    'provider', _e.provider, 'event', _e.event,
    'status', _e.status, 'attempts', _e.attempts, 'nextRetryAt', _e.next_retry_at,
    'lastError', _e.error_history -> -1, 'externalId', _e.external_id,
    'createdAt', _e.created_at, 'updatedAt', _e.updated_at, 'state', _state);
END;
COMMENT ON FUNCTION dashboard._emission_json(insurance.integration_emissions, insurance.risk_items, text) IS
  'One emission _e of risk item _r in state _state as the dashboard shows it (riskItemUid, policyUid; lastError: '
  'the newest error_history entry). Inlined; dashboard role.';
-- _emission_json(e, r): the same, its state from the owner-run dashboard._emission_state(e).
CREATE OR REPLACE FUNCTION dashboard._emission_json(_e insurance.integration_emissions, _r insurance.risk_items) RETURNS jsonb
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT dashboard._emission_json(_e, _r, dashboard._emission_state(_e));
END;
COMMENT ON FUNCTION dashboard._emission_json(insurance.integration_emissions, insurance.risk_items) IS
  'One emission _e of risk item _r as the dashboard shows it (dashboard._emission_json(_e, _r, state), the state '
  'from dashboard._emission_state(_e)). Inlined; dashboard role.';
-- squawk-ignore ban-drop-function -- a private helper, no client's: its one caller, risk_item_emissions, reads the same itself
DROP FUNCTION IF EXISTS dashboard._risk_item_context(bigint);
-- risk_item_emissions(id, uid): {riskItem, emissions[]} (emissions oldest first) of the item named by id or uid;
-- PT404 NOT_FOUND for a risk item the caller cannot see.
-- One query, run as the owner: what the dashboard role may not read itself (packages and
-- channels hold no dashboard policy, a channel row holds its key hash; beneficiaries and claims)
-- joins in the same plan, where a SECURITY DEFINER call per emission (its state) and one for the
-- context cost more than the reads (tRPC byRiskItem); the webhook deliveries stay one
-- call of _emission_webhooks. The dashboard's policies on risk_items and integration_emissions
-- (a session's claims: role dashboard and a subject) are checked first, as they would hide the item.
-- The item is found by id, or by uid through coalesce: one generic plan serves both, kept for
-- the session (an OR of the two made the plan cache plan every call again).
-- Webhook deliveries exist only for an item sold through a channel (a channel_id, set at the
-- insert and never changed) that has emissions: for any other item the answer's webhooks are
-- '[]' without the call of _emission_webhooks (a call and a plan start-up that find nothing).
-- The claims are read once (insurance.claims()), not parsed once per claim.
CREATE OR REPLACE FUNCTION dashboard.risk_item_emissions(_id bigint, _uid uuid DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _answer jsonb;
  _claims jsonb := insurance.claims();
BEGIN
  IF pg_catalog.current_setting('role') <> 'insurance_dashboard' THEN  -- the owner may; anyone else is refused
    PERFORM insurance.require_role('insurance_dashboard');
  ELSIF _claims ->> 'role' IS DISTINCT FROM 'dashboard' OR _claims ->> 'sub' IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'NOT_FOUND';
  END IF;
  SELECT pg_catalog.jsonb_build_object(
           'riskItem', pg_catalog.jsonb_build_object(
             'id', r.id, 'uid', r.uid, 'policyUid', r.policy_uid, 'packageId', r.package_id, 'status', r.status,
             'variant', r.variant, 'integration', r.metadata -> 'integration', 'createdAt', r.created_at,
             'package', pg_catalog.jsonb_build_object('id', p.id, 'uid', p.uid, 'name', p.name),
             'channel', CASE WHEN c.id IS NULL THEN NULL ELSE pg_catalog.jsonb_build_object('id', c.id, 'name', c.name) END,
             'beneficiaries', coalesce((SELECT pg_catalog.jsonb_agg(insurance.beneficiary_json(b) ORDER BY b.is_holder DESC, b.id)
                                          FROM insurance.beneficiaries b WHERE b.risk_item_id = r.id), '[]')),
           'emissions', coalesce(em.list, '[]'),
           'webhooks', CASE WHEN r.channel_id IS NULL OR em.ids = '{}' THEN '[]'::jsonb
                            ELSE dashboard._emission_webhooks(em.ids) END)
    INTO _answer
    FROM insurance.risk_items r
    JOIN insurance.packages p ON p.id = r.package_id
    LEFT JOIN insurance.channels c ON c.id = r.channel_id
    CROSS JOIN LATERAL (  -- the item's emissions read once: their JSON and their ids (for the webhooks)
      SELECT pg_catalog.jsonb_agg(dashboard._emission_json(e, r, dashboard._emission_state(e, EXISTS (
               SELECT FROM insurance.emission_claims k
                WHERE k.risk_item_id = e.risk_item_id AND k.provider = e.provider AND k.event = e.event
                  AND k.lease_until > pg_catalog.now()), EXISTS (
               SELECT FROM insurance.provider_pauses z
                WHERE z.provider = e.provider AND (z.until IS NULL OR z.until > pg_catalog.now())))) ORDER BY e.id) AS list,
             coalesce(pg_catalog.array_agg(e.id), '{}') AS ids
        FROM insurance.integration_emissions e WHERE e.risk_item_id = r.id) em
   WHERE r.id = coalesce(_id, (SELECT u.id FROM insurance.risk_items u WHERE u.uid = _uid))
     AND (_uid IS NULL OR r.uid = _uid);
  IF _answer IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'NOT_FOUND';
  END IF;
  RETURN _answer;
END
$$;
COMMENT ON FUNCTION dashboard.risk_item_emissions(bigint, uuid) IS
  '{riskItem (with its package {id, uid, name}, channel {id, name} or null, beneficiaries), emissions '
  '(oldest first, each with riskItemUid, policyUid and state), webhooks (every partner delivery of them)} of the risk item named by id _id or uid _uid (both: '
  'the same item); raises PT404 NOT_FOUND when the caller cannot see it. Dashboard role (the back-office '
  'page and tRPC).';
REVOKE ALL ON FUNCTION dashboard._emission_json(insurance.integration_emissions, insurance.risk_items),
  dashboard._emission_json(insurance.integration_emissions, insurance.risk_items, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dashboard.risk_item_emissions(bigint, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._emission_json(insurance.integration_emissions, insurance.risk_items),
  dashboard._emission_json(insurance.integration_emissions, insurance.risk_items, text) TO insurance_dashboard;
GRANT EXECUTE ON FUNCTION dashboard.risk_item_emissions(bigint, uuid) TO insurance_dashboard, insurance_app;
-- list_emissions(statuses, provider, event, since, until, after_id, limit): one page of
-- emissions, newest first, filtered by state (any of; as dashboard._emission_state says them:
-- SUCCESS, IN_PROGRESS, ABANDONED, PAUSED, RETRY_QUEUED, FAILED), provider, event and last change
-- (updated_at in [since, until)); keyset pagination on id: {items[], nextCursor} where
-- nextCursor is the after_id of the next page, or NULL on the last one.
-- A state filter reads its status's newest rows through (status, id DESC), one state at a
-- time, and merges them (PostgreSQL 15 gives no ordered index scan for `= ANY`, and reading by
-- id until a page of a rare status is full reads the table: docs/performance.md, "Cost that stays
-- flat as the tables fill").
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
  _busy bigint[];
  _paused text[];
  _status text;
BEGIN
  IF current_user <> 'insurance_owner' AND pg_catalog.current_setting('role') <> 'insurance_dashboard' THEN
    PERFORM insurance.require_role('insurance_dashboard');  -- a call only for a caller it may refuse
  END IF;
  IF _limit IS NULL OR _limit NOT BETWEEN 1 AND 100 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'limit must be between 1 and 100', DETAIL = 'BAD_REQUEST';
  END IF;
  _busy := dashboard._in_progress_ids();
  _paused := ARRAY(SELECT z.provider FROM insurance.provider_pauses z  -- inline: no call per page
                    WHERE z.until IS NULL OR z.until > pg_catalog.now());
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
      -- Each state (_emission_state) with its own statement, so that it keeps its plan through
      -- (status, id DESC): a state is its status's rows less those another state takes (the
      -- claimed ones are IN_PROGRESS, a paused provider's FAILED ones PAUSED, due ones
      -- RETRY_QUEUED); IN_PROGRESS reads the claimed ids (as many as the workers hold).
      IF _status = 'IN_PROGRESS' THEN
        _ids := _ids || ARRAY(SELECT e.id FROM insurance.integration_emissions e
                               WHERE e.id = ANY (_busy)
                                 AND (_provider IS NULL OR e.provider = _provider)
                                 AND (_event IS NULL OR e.event = _event)
                                 AND (_since IS NULL OR e.updated_at >= _since)
                                 AND (_until IS NULL OR e.updated_at < _until)
                                 AND (_after_id IS NULL OR e.id < _after_id)
                               ORDER BY e.id DESC
                               LIMIT _limit + 1);
        CONTINUE;
      END IF;
      _ids := _ids || ARRAY(SELECT e.id FROM insurance.integration_emissions e
                             WHERE e.status = CASE WHEN _status IN ('PAUSED', 'RETRY_QUEUED') THEN 'FAILED' ELSE _status END
                               AND (e.status = 'SUCCESS' OR NOT (e.id = ANY (_busy)))
                               AND (e.status <> 'FAILED'
                                    OR dashboard._emission_state(e, false, e.provider = ANY (_paused)) = _status)
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
  -- The page's states from one look at the live claims and the pauses, not a SECURITY DEFINER
  -- call per row.
  RETURN jsonb_build_object(
    'items', coalesce((SELECT jsonb_agg(dashboard._emission_json(e, i, dashboard._emission_state(
                                          e, e.id = ANY (_busy), e.provider = ANY (_paused)))
                                        ORDER BY e.id DESC)
                         FROM unnest(_rows[1:_limit]) e JOIN insurance.risk_items i ON i.id = e.risk_item_id), '[]'),
    'nextCursor', CASE WHEN cardinality(_rows) > _limit THEN (_rows[_limit]).id::text END);
END
$$;
COMMENT ON FUNCTION dashboard.list_emissions(text[], text, text, timestamp with time zone, timestamp with time zone, bigint, integer) IS
  'One page of emissions, newest first, filtered by states (_statuses: SUCCESS, IN_PROGRESS, ABANDONED, PAUSED, '
  'RETRY_QUEUED, FAILED, as dashboard._emission_state says them), provider, event and updated_at in '
  '[_since, _until), keyset on id: {items, nextCursor}; raises PT400 BAD_REQUEST for a limit outside '
  '1..100. Dashboard role.';
-- emission_detail(emission_id): {emission (with errorHistory, each entry as recorded, its
-- masked requestPayload included when the pipeline stored one), riskItem, retryPending,
-- channel {id, name} | null, webhooks[] (every partner delivery of it)};
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
    -- Only a FAILED emission has a retry to wait for: a late /retry row of a settled one sends nothing.
    'retryPending', _e.status = 'FAILED' AND EXISTS (SELECT FROM outbox.http_requests o
                             WHERE o.delivered_at IS NULL AND o.body ? 'emissionId'
                               AND (o.body ->> 'emissionId')::bigint = _e.id),
    'pause', integrations.paused_providers() -> _e.provider,
    'channel', dashboard._channel_json((SELECT r.channel_id FROM insurance.risk_items r WHERE r.id = _e.risk_item_id)),
    'webhooks', dashboard._emission_webhooks(ARRAY[_e.id]));
END
$$;
COMMENT ON FUNCTION dashboard.emission_detail(bigint) IS
  '{emission (with errorHistory, state), riskItem, retryPending (FAILED with a /retry waiting), pause ({pausedAt, '
  'until} while its provider is paused, else null), channel, webhooks} of emission _emission_id; raises PT404 '
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
COMMIT;
