-- Deploy insurance:dashboard_privacy to pg
-- The back-office's share of a person's data: export and erasure under retention (audited with the
-- session's user), and one audit row per view of a person's data (record_view).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- The session's user is the actor. SECURITY DEFINER: the dashboard role may not write the audit
-- log nor delete history.
CREATE FUNCTION dashboard.person_export(_email text) RETURNS jsonb
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

CREATE FUNCTION dashboard.person_erase(_email text) RETURNS jsonb
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

-- record_view(action, items, item_uids, emails): one audit row of who saw whose data (a page, a
-- search, an RPC). Its targets name the e-mails shown or searched for, every e-mail of the items
-- shown, named by id or by uid (holders, beneficiaries, the insured: `audit --about` finds the
-- view from any of them), and the items as {"riskItemId": id}. One statement. The switched role
-- and the claims are read inline (require_role only for another role): a page view costs one
-- INSERT, not three function calls around it.
CREATE FUNCTION dashboard.record_view(_action text, _items bigint[], _item_uids uuid[], _emails text[])
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _claims jsonb := coalesce(nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb, '{}');
  _id     bigint;
BEGIN
  IF pg_catalog.current_setting('role') <> 'insurance_dashboard' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
  IF _action IS NULL OR _action NOT IN ('people.viewRiskItem', 'people.search') THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'not a view action', DETAIL = 'BAD_REQUEST';
  END IF;
  INSERT INTO insurance.audit_log (actor, via, action, targets, result)
  SELECT 'dashboard:' || coalesce(_claims ->> 'email', 'user-' || (_claims ->> 'sub')), 'backoffice', _action,
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
COMMENT ON FUNCTION dashboard.record_view(text, bigint[], uuid[], text[]) IS
  'Writes one audit row (people.viewRiskItem, people.search) naming the session''s user and whose data was shown: '
  'the e-mails given, every e-mail of the items given (by id or uid), the items; one statement; returns its id; '
  'raises PT400 for another action. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.record_view(text, bigint[], uuid[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.record_view(text, bigint[], uuid[], text[]) TO insurance_dashboard, insurance_app;

-- audit_about(email, limit): the audit rows naming a person, newest first (the Privacy page).
CREATE FUNCTION dashboard.audit_about(_email text, _limit integer) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  IF _limit IS NULL OR _limit NOT BETWEEN 1 AND 500 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'limit must be between 1 and 500', DETAIL = 'BAD_REQUEST';
  END IF;
  RETURN (SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.to_jsonb(a) ORDER BY a.id DESC), '[]')
            FROM (SELECT a.id, a.at, a.actor, a.on_behalf_of AS "onBehalfOf", a.via, a.action, a.targets, a.result
                    FROM insurance.audit_log a
                   WHERE a.targets @> pg_catalog.jsonb_build_array(pg_catalog.lower(_email))
                   ORDER BY a.id DESC LIMIT _limit) a);
END
$$;
COMMENT ON FUNCTION dashboard.audit_about(text, integer) IS
  'The audit rows whose targets name the e-mail (views, exports, erasures), newest first, at most _limit (1..500). '
  'Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.audit_about(text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.audit_about(text, integer) TO insurance_dashboard, insurance_app;

COMMIT;
