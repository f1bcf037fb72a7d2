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
GRANT EXECUTE ON FUNCTION dashboard.person_export(text) TO insurance_dashboard;

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
GRANT EXECUTE ON FUNCTION dashboard.person_erase(text) TO insurance_dashboard;

-- record_view(action, targets): one audit row of who saw whose data (a page, a search, an RPC).
CREATE FUNCTION dashboard.record_view(_action text, _targets jsonb) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  IF _action NOT IN ('people.viewRiskItem', 'people.search', 'people.viewAudit') THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'not a view action', DETAIL = 'BAD_REQUEST';
  END IF;
  INSERT INTO insurance.audit_log (actor, via, action, targets, result)
  VALUES (dashboard._actor(), 'backoffice', _action, coalesce(_targets, '[]'), 'ok');
END
$$;
COMMENT ON FUNCTION dashboard.record_view(text, jsonb) IS
  'Writes one audit row (people.viewRiskItem, people.search, people.viewAudit) naming the session''s user and '
  'whose data was shown (_targets: e-mails and item uids), in one statement. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.record_view(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.record_view(text, jsonb) TO insurance_dashboard;

COMMIT;
