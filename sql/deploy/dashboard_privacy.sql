-- Deploy insurance:dashboard_privacy to pg
-- The back-office's share of a person's data: export and erasure under retention (audited with the
-- session's user), and one audit row per view of a person's data (record_view).
-- Reworked after v1.1.0: a view is audited in the call that shows it. The tRPC byRiskItem and the
-- back-office's risk item page call view_risk_item, the emission page view_emission: the answer
-- and its audit row in one statement (one round trip, and no answer without its row). A view's
-- via is the surface that showed it (backoffice or trpc: _record_view), people.viewEmission joins
-- the actions. audit_about reads the person's rows by index first (audit_log_targets_idx).
-- Restated whole (CREATE OR REPLACE: it runs over the released functions).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- The session's user is the actor. SECURITY DEFINER: the dashboard role may not write the audit
-- log nor delete history.
CREATE OR REPLACE FUNCTION dashboard.person_export(_email text) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  RETURN insurance._person_export(dashboard._actor(), _email, 'backoffice');
END
$$;
COMMENT ON FUNCTION dashboard.person_export(text) IS
  'Back-office export of everything held about a person (insurance._person_export), audited with the session''s '
  'user. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.person_export(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.person_export(text) TO insurance_dashboard, insurance_app;

CREATE OR REPLACE FUNCTION dashboard.person_erase(_email text) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  RETURN insurance._person_erase(dashboard._actor(), _email, 'backoffice');
END
$$;
COMMENT ON FUNCTION dashboard.person_erase(text) IS
  'Back-office erasure under retention (insurance._person_erase), audited with the session''s user. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.person_erase(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.person_erase(text) TO insurance_dashboard, insurance_app;

-- _record_view(action, via, items, item_uids, emails): one audit row of who saw whose data (a
-- page, a search, an RPC) through `via` (backoffice or trpc). Its targets name the e-mails shown
-- or searched for, every e-mail of the items shown, named by id or by uid (holders,
-- beneficiaries, the insured: `audit --about` finds the view from any of them), and the items as
-- {"riskItemId": id}. One statement. The switched role and the claims are read inline
-- (require_role only for another role): a page view costs one INSERT, not three function calls
-- around it, committed asynchronously (below). SECURITY DEFINER: the dashboard role may not
-- write the audit log.
CREATE OR REPLACE FUNCTION dashboard._record_view(_action text, _via text, _items bigint[], _item_uids uuid[],
                                                  _emails text[]) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _claims jsonb := coalesce(nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb, '{}');
  _id     bigint;
BEGIN
  IF pg_catalog.current_setting('role') <> 'insurance_dashboard' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
  IF _action IS NULL OR _action NOT IN ('people.viewRiskItem', 'people.viewEmission', 'people.search') THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'not a view action', DETAIL = 'BAD_REQUEST';
  END IF;
  IF _via IS NULL OR _via NOT IN ('backoffice', 'trpc') THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'via must be backoffice or trpc', DETAIL = 'BAD_REQUEST';
  END IF;
  -- A view's row is committed without waiting for its WAL to reach the disk: this call's
  -- transaction has no other write, and a crash of PostgreSQL may lose the views of its last
  -- fraction of a second (wal_writer_delay), never a change; exports, erasures and every
  -- change stay synchronous. Waiting for the flush tripled tRPC byRiskItem's p99 (issue 43).
  PERFORM pg_catalog.set_config('synchronous_commit', 'off', true);
  INSERT INTO insurance.audit_log (actor, via, action, targets, result)
  SELECT 'dashboard:' || coalesce(_claims ->> 'email', 'user-' || (_claims ->> 'sub')), _via, _action,
         coalesce((SELECT pg_catalog.jsonb_agg(DISTINCT pg_catalog.to_jsonb(m.e))
                     FROM (SELECT pg_catalog.lower(x) AS e FROM pg_catalog.unnest(_emails) x
                           UNION SELECT b.email FROM insurance.beneficiaries b
                                  WHERE b.risk_item_id = ANY (i.ids) AND b.email IS NOT NULL
                           UNION SELECT r.insured_subject ->> 'email' FROM insurance.risk_items r
                                  WHERE r.id = ANY (i.ids)) m
                    WHERE m.e IS NOT NULL), '[]')
         || coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('riskItemId', x) ORDER BY x)
                        FROM pg_catalog.unnest(i.ids) x), '[]'),
         'ok'
    FROM (SELECT coalesce(_items, '{}') || ARRAY(SELECT r.id FROM insurance.risk_items r
                                                  WHERE r.uid = ANY (coalesce(_item_uids, '{}'))) AS ids) i
  RETURNING id INTO _id;
  RETURN _id;
END
$$;
COMMENT ON FUNCTION dashboard._record_view(text, text, bigint[], uuid[], text[]) IS
  'Writes one audit row (people.viewRiskItem, people.viewEmission, people.search) naming the session''s user, the '
  'surface _via (backoffice or trpc) and whose data was shown: the e-mails given, every e-mail of the items given '
  '(by id or uid), the items; one statement; returns its id; raises PT400 for another action or surface. Its '
  'transaction commits with synchronous_commit off. record_view, view_risk_item and view_emission (dashboard role).';
REVOKE ALL ON FUNCTION dashboard._record_view(text, text, bigint[], uuid[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._record_view(text, text, bigint[], uuid[], text[]) TO insurance_dashboard;

-- record_view(action, items, item_uids, emails): _record_view through the back-office (its
-- search page; the released signature, kept for callers of 1.1.0).
CREATE OR REPLACE FUNCTION dashboard.record_view(_action text, _items bigint[], _item_uids uuid[], _emails text[])
RETURNS bigint
LANGUAGE sql SET search_path = '' AS $$
  SELECT dashboard._record_view(_action, 'backoffice', _items, _item_uids, _emails)
$$;
COMMENT ON FUNCTION dashboard.record_view(text, bigint[], uuid[], text[]) IS
  'dashboard._record_view(_action, ''backoffice'', _items, _item_uids, _emails): one audit row of a back-office '
  'view of people''s data; returns its id; PT400 for an action that is no view. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.record_view(text, bigint[], uuid[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.record_view(text, bigint[], uuid[], text[]) TO insurance_dashboard, insurance_app;

-- view_risk_item(id, uid, via): dashboard.risk_item_emissions(id, uid) (the item, its people and
-- its emissions), with its view audited (_record_view people.viewRiskItem, via backoffice or
-- trpc). A PT404 writes nothing.
CREATE OR REPLACE FUNCTION dashboard.view_risk_item(_id bigint, _uid uuid, _via text) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _answer jsonb;
BEGIN
  IF pg_catalog.current_setting('role') <> 'insurance_dashboard' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
  IF _via IS NULL OR _via NOT IN ('backoffice', 'trpc') THEN  -- before the read: a refused call shows nothing
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'via must be backoffice or trpc', DETAIL = 'BAD_REQUEST';
  END IF;
  _answer := dashboard.risk_item_emissions(_id, _uid);
  PERFORM dashboard._record_view('people.viewRiskItem', _via, ARRAY[(_answer #>> '{riskItem,id}')::bigint], NULL, NULL);
  RETURN _answer;
END
$$;
COMMENT ON FUNCTION dashboard.view_risk_item(bigint, uuid, text) IS
  'dashboard.risk_item_emissions(_id, _uid) with one audit row people.viewRiskItem of its view (via _via: '
  'backoffice or trpc, else PT400); PT404 NOT_FOUND, unaudited, for an item the caller cannot see. The '
  'back-office''s risk item page and tRPC byRiskItem (dashboard role).';
REVOKE ALL ON FUNCTION dashboard.view_risk_item(bigint, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.view_risk_item(bigint, uuid, text) TO insurance_dashboard, insurance_app;

-- view_emission(emission_id): dashboard.emission_detail (its request payload may name the
-- item's people), with its view audited (_record_view people.viewEmission, the emission's item).
CREATE OR REPLACE FUNCTION dashboard.view_emission(_emission_id bigint) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _answer jsonb := dashboard.emission_detail(_emission_id);
BEGIN
  PERFORM dashboard._record_view('people.viewEmission', 'backoffice', ARRAY[(_answer #>> '{riskItem,id}')::bigint],
                                 NULL, NULL);
  RETURN _answer;
END
$$;
COMMENT ON FUNCTION dashboard.view_emission(bigint) IS
  'dashboard.emission_detail(_emission_id) with one audit row people.viewEmission naming its risk item''s people; '
  'PT404 NOT_FOUND, unaudited, for an emission the caller cannot see. The back-office''s emission page '
  '(dashboard role).';
REVOKE ALL ON FUNCTION dashboard.view_emission(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.view_emission(bigint) TO insurance_dashboard, insurance_app;

-- audit_about(email, limit): the audit rows naming a person, newest first (the Privacy page).
CREATE OR REPLACE FUNCTION dashboard.audit_about(_email text, _limit integer) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  IF _limit IS NULL OR _limit NOT BETWEEN 1 AND 500 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'limit must be between 1 and 500', DETAIL = 'BAD_REQUEST';
  END IF;
  -- The person's rows by index (audit_log_targets_idx), then the newest of them: a newest-first
  -- walk of the whole log stopped at _limit matches read every row for a person seen rarely.
  RETURN (WITH about AS MATERIALIZED (
            SELECT a.id, a.at, a.actor, a.on_behalf_of AS "onBehalfOf", a.via, a.action, a.targets, a.result
              FROM insurance.audit_log a
             WHERE a.targets @> pg_catalog.jsonb_build_array(pg_catalog.lower(_email)))
          SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.to_jsonb(a) ORDER BY a.id DESC), '[]')
            FROM (SELECT * FROM about ORDER BY about.id DESC LIMIT _limit) a);
END
$$;
COMMENT ON FUNCTION dashboard.audit_about(text, integer) IS
  'The audit rows whose targets name the e-mail (views, exports, erasures), newest first, at most _limit (1..500). '
  'Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.audit_about(text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.audit_about(text, integer) TO insurance_dashboard, insurance_app;

COMMIT;
