-- Deploy insurance:dashboard_providers to pg
-- The back-office providers page: for each insurer and for partners' webhooks, the calls, the
-- failures and the p95 answer time per minute over the last hours (insurance.provider_call_minutes,
-- read by minute: at most one folded row per target and minute, whatever the traffic), and
-- whether it is paused; pause and resume, audited.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- _p95_ms(buckets): the upper bound (ms) of the bucket that holds the 95th percentile of an
-- answer-time histogram (insurance.provider_call_buckets), or NULL when it is empty.
CREATE FUNCTION dashboard._p95_ms(_buckets integer[]) RETURNS integer
LANGUAGE plpgsql IMMUTABLE SET search_path = '' AS $$
DECLARE
  _bounds integer[] := insurance.provider_call_buckets();
  _total numeric := (SELECT sum(n) FROM pg_catalog.unnest(_buckets) n);
  _seen numeric := 0;
BEGIN
  IF coalesce(_total, 0) = 0 THEN
    RETURN NULL;
  END IF;
  FOR _i IN 1 .. pg_catalog.cardinality(_buckets) LOOP
    _seen := _seen + _buckets[_i];
    IF _seen >= pg_catalog.ceil(_total * 0.95) THEN
      RETURN _bounds[least(_i, pg_catalog.cardinality(_bounds))];
    END IF;
  END LOOP;
  RETURN _bounds[pg_catalog.cardinality(_bounds)];
END
$$;
COMMENT ON FUNCTION dashboard._p95_ms(integer[]) IS
  'The p95 of an answer-time histogram _buckets (insurance.provider_call_buckets): its bucket''s upper bound in ms '
  '(the last, open bucket says its lower bound), NULL when empty. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard._p95_ms(integer[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._p95_ms(integer[]) TO insurance_dashboard;

-- providers_health(hours): {from, to, hours, slotMinutes, providers: [{provider, paused {pausedAt,
-- until} | null, calls, failures, p95Ms, slots: [{at, calls, failures, p95Ms}]}]}: the window in 60
-- slots of `hours` minutes each; the configured providers, the paused ones and those called in
-- the window, by code, then WEBHOOKS.
CREATE FUNCTION dashboard.providers_health(_hours integer) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _to timestamptz := pg_catalog.date_trunc('minute', pg_catalog.now()) + interval '1 minute';
  _from timestamptz;
  _bounds integer[] := insurance.provider_call_buckets();
  _answer jsonb;
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  IF _hours IS NULL OR _hours NOT BETWEEN 1 AND 24 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'hours must be between 1 and 24', DETAIL = 'VALIDATION_ERROR',
                          HINT = '[{"field": "hours", "message": "between 1 and 24"}]';
  END IF;
  _from := _to - pg_catalog.make_interval(hours => _hours);
  -- Set-based, one pass over the window's rows (by provider_call_minutes_minute_idx), in 60
  -- slots of _hours minutes each (what the chart draws): the buckets summed per (target, slot)
  -- and per target, each p95 the first bucket whose running sum reaches 95% (as
  -- dashboard._p95_ms says of one histogram).
  WITH r AS MATERIALIZED (
    SELECT m.target, _from + pg_catalog.make_interval(mins => _hours * (pg_catalog.floor(
             EXTRACT(epoch FROM m.minute - _from) / 60 / _hours))::integer) AS slot,
           m.calls, m.failures, m.buckets
      FROM insurance.provider_call_minutes m
     WHERE m.minute >= _from AND m.minute < _to
  ), per_slot AS (
    SELECT r.target, r.slot, sum(r.calls) AS calls, sum(r.failures) AS failures FROM r GROUP BY r.target, r.slot
  ), b AS MATERIALIZED (
    SELECT r.target, r.slot, x.i, sum(x.n) AS n
      FROM r CROSS JOIN LATERAL pg_catalog.unnest(r.buckets) WITH ORDINALITY AS x(n, i)
     GROUP BY r.target, r.slot, x.i
  ), slot_p95 AS (
    SELECT c.target, c.slot, min(c.i) FILTER (WHERE c.upto >= pg_catalog.ceil(c.total * 0.95) AND c.total > 0) AS i
      FROM (SELECT b.*, sum(b.n) OVER (PARTITION BY b.target, b.slot ORDER BY b.i) AS upto,
                   sum(b.n) OVER (PARTITION BY b.target, b.slot) AS total FROM b) c
     GROUP BY c.target, c.slot
  ), target_p95 AS (
    SELECT c.target, min(c.i) FILTER (WHERE c.upto >= pg_catalog.ceil(c.total * 0.95) AND c.total > 0) AS i
      FROM (SELECT t.*, sum(t.n) OVER (PARTITION BY t.target ORDER BY t.i) AS upto,
                   sum(t.n) OVER (PARTITION BY t.target) AS total
              FROM (SELECT b.target, b.i, sum(b.n) AS n FROM b GROUP BY b.target, b.i) t) c
     GROUP BY c.target
  ), per_target AS (
    SELECT m.target, sum(m.calls) AS calls, sum(m.failures) AS failures,
           pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
             'at', m.slot, 'calls', m.calls, 'failures', m.failures,
             'p95Ms', CASE WHEN p.i IS NOT NULL THEN _bounds[least(p.i, pg_catalog.cardinality(_bounds))] END)
             ORDER BY m.slot) AS slots
      FROM per_slot m JOIN slot_p95 p ON p.target = m.target AND p.slot = m.slot
     GROUP BY m.target
  ), targets AS (
    SELECT i.slug AS target FROM insurance.integrations i
    UNION SELECT z.provider FROM insurance.provider_pauses z WHERE z.until IS NULL OR z.until > pg_catalog.now()
    UNION SELECT w.target FROM per_target w
    UNION SELECT 'WEBHOOKS'
  )
  SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'provider', t.target,
           'paused', (SELECT pg_catalog.jsonb_build_object('pausedAt', z.paused_at, 'until', z.until)
                        FROM insurance.provider_pauses z
                       WHERE z.provider = t.target AND (z.until IS NULL OR z.until > pg_catalog.now())),
           'calls', coalesce(w.calls, 0), 'failures', coalesce(w.failures, 0),
           'p95Ms', CASE WHEN q.i IS NOT NULL THEN _bounds[least(q.i, pg_catalog.cardinality(_bounds))] END,
           'slots', coalesce(w.slots, '[]'))
           ORDER BY t.target = 'WEBHOOKS', t.target)
    INTO _answer
    FROM targets t
    LEFT JOIN per_target w ON w.target = t.target
    LEFT JOIN target_p95 q ON q.target = t.target;
  RETURN pg_catalog.jsonb_build_object('from', _from, 'to', _to, 'hours', _hours, 'slotMinutes', _hours,
                                       'providers', coalesce(_answer, '[]'));
END
$$;
COMMENT ON FUNCTION dashboard.providers_health(integer) IS
  'Each provider''s (configured, paused or called) and the webhooks'' (WEBHOOKS) health over the last _hours (1..24): '
  '{from, to, hours, slotMinutes, providers: [{provider, paused {pausedAt, until} | null, calls, failures, p95Ms, '
  'slots: [{at, calls, failures, p95Ms}] (60 slots of _hours minutes; those without calls left out)}]}; raises PT400 '
  'VALIDATION_ERROR for hours '
  'outside 1..24. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.providers_health(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.providers_health(integer) TO insurance_dashboard, insurance_app;

-- pause_provider(provider, until, via) / resume_provider(provider, via): integrations.pause_provider
-- and resume_provider for a dashboard session, each with its audit row (providers.pause,
-- providers.resume; targets: the provider; details: via, until, retries queued).
CREATE FUNCTION dashboard.pause_provider(_provider text, _until timestamptz, _via text) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _out jsonb;
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  IF insurance.claim('role') IS DISTINCT FROM 'dashboard' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'a dashboard session is required', DETAIL = 'UNAUTHORIZED';
  END IF;
  _out := integrations.pause_provider(_provider, _until);
  PERFORM insurance.record_audit(dashboard._actor(), 'providers.pause', pg_catalog.jsonb_build_array(_provider), 'ok',
                                 pg_catalog.jsonb_build_object('via', _via, 'until', _until));
  RETURN _out;
END
$$;
COMMENT ON FUNCTION dashboard.pause_provider(text, timestamptz, text) IS
  'Pauses provider _provider until _until (NULL: until resumed) with an audit row providers.pause via _via; returns '
  'integrations.pause_provider''s answer; raises PT400 VALIDATION_ERROR for a bad code or a past end. Dashboard session only.';
REVOKE ALL ON FUNCTION dashboard.pause_provider(text, timestamptz, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.pause_provider(text, timestamptz, text) TO insurance_dashboard, insurance_app;

CREATE FUNCTION dashboard.resume_provider(_provider text, _via text) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _out jsonb;
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  IF insurance.claim('role') IS DISTINCT FROM 'dashboard' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'a dashboard session is required', DETAIL = 'UNAUTHORIZED';
  END IF;
  _out := integrations.resume_provider(_provider);
  PERFORM insurance.record_audit(dashboard._actor(), 'providers.resume', pg_catalog.jsonb_build_array(_provider), 'ok',
                                 pg_catalog.jsonb_build_object('via', _via, 'wasPaused', _out -> 'wasPaused',
                                                               'retriesQueued', _out -> 'retriesQueued'));
  RETURN _out;
END
$$;
COMMENT ON FUNCTION dashboard.resume_provider(text, text) IS
  'Resumes provider _provider (its due emissions queued at once) with an audit row providers.resume via _via; returns '
  'integrations.resume_provider''s answer {provider, paused, wasPaused, retriesQueued}. Dashboard session only.';
REVOKE ALL ON FUNCTION dashboard.resume_provider(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.resume_provider(text, text) TO insurance_dashboard, insurance_app;

COMMIT;
