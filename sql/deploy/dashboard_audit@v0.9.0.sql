-- Deploy insurance:dashboard_audit to pg
-- The back-office audit page: the audit log, newest first
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- list_audit(before_id, limit): the audit log, newest first, in keyset pages on id:
-- {items[{id, at, actor, onBehalfOf, via, action, targets, result, details}], nextCursor}.
CREATE FUNCTION dashboard.list_audit(_before_id bigint, _limit integer) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _rows jsonb;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
  IF _limit IS NULL OR _limit NOT BETWEEN 1 AND 100 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'limit must be between 1 and 100', DETAIL = 'BAD_REQUEST';
  END IF;
  SELECT jsonb_agg(to_jsonb(a) ORDER BY a.id DESC) INTO _rows
    FROM (SELECT a.id, a.at, a.actor, a.on_behalf_of AS "onBehalfOf", a.via, a.action, a.targets, a.result, a.details
            FROM insurance.audit_log a
           WHERE _before_id IS NULL OR a.id < _before_id ORDER BY a.id DESC LIMIT _limit + 1) a;
  RETURN jsonb_build_object(
    'items', coalesce((SELECT jsonb_agg(x) FROM jsonb_array_elements(_rows) WITH ORDINALITY a(x, n) WHERE n <= _limit), '[]'),
    'nextCursor', CASE WHEN jsonb_array_length(coalesce(_rows, '[]')) > _limit
                       THEN (_rows -> (_limit - 1) ->> 'id') END);
END
$$;
COMMENT ON FUNCTION dashboard.list_audit(bigint, integer) IS
  'The audit log, newest first, keyset on id: {items [{id, at, actor, onBehalfOf, via, action, targets, '
  'result, details}], nextCursor}; raises PT400 for a limit outside 1..100. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.list_audit(bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.list_audit(bigint, integer) TO insurance_dashboard, insurance_app;

COMMIT;
