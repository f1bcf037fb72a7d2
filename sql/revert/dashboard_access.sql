-- Revert insurance:dashboard_access from pg (back to @v1.0: list_emissions without the event
-- filter, no audited retries, no back-office reads)
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP FUNCTION dashboard.retry_outbox(bigint[]);
DROP FUNCTION dashboard.retry_emissions(bigint[], text);
DROP FUNCTION dashboard._actor();
DROP INDEX insurance.audit_log_id_desc_idx;
DROP FUNCTION dashboard.list_audit(bigint, integer);
DROP FUNCTION dashboard.list_outbox(boolean, bigint, integer);
DROP FUNCTION dashboard._outbox_url(text);
DROP FUNCTION dashboard.emission_detail(bigint);
DROP FUNCTION dashboard.list_emissions(text[], text, text, timestamptz, timestamptz, bigint, integer);
DROP INDEX insurance.integration_emissions_event_id_idx;
REVOKE USAGE ON SCHEMA outbox FROM insurance_dashboard;

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
REVOKE ALL ON FUNCTION dashboard.list_emissions(text[], text, timestamptz, timestamptz, bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.list_emissions(text[], text, timestamptz, timestamptz, bigint, integer)
  TO insurance_dashboard, insurance_app;
COMMIT;
