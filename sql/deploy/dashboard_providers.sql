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
CREATE FUNCTION dashboard._p95_ms(_buckets bigint[]) RETURNS integer
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
COMMENT ON FUNCTION dashboard._p95_ms(bigint[]) IS
  'The p95 of an answer-time histogram _buckets (insurance.provider_call_buckets): its bucket''s upper bound in ms '
  '(the last, open bucket says its lower bound), NULL when empty. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard._p95_ms(bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._p95_ms(bigint[]) TO insurance_dashboard;

-- providers_health(hours): {from, to, hours, providers: [{provider, paused {pausedAt, until} | null,
-- calls, failures, p95Ms, minutes: [{minute, calls, failures, p95Ms}]}]}, the configured
-- providers, the paused ones and those called in the window, by code, then WEBHOOKS.
CREATE FUNCTION dashboard.providers_health(_hours integer) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _to timestamptz := pg_catalog.date_trunc('minute', pg_catalog.now()) + interval '1 minute';
  _from timestamptz;
  _answer jsonb;
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  IF _hours IS NULL OR _hours NOT BETWEEN 1 AND 24 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'hours must be between 1 and 24', DETAIL = 'VALIDATION_ERROR',
                          HINT = '[{"field": "hours", "message": "between 1 and 24"}]';
  END IF;
  _from := _to - pg_catalog.make_interval(hours => _hours);
  WITH per_minute AS (  -- the window's rows, by provider_call_minutes_minute_idx
    SELECT m.target, m.minute, sum(m.calls) AS calls, sum(m.failures) AS failures,
           ARRAY(SELECT sum(b.n)::bigint
                   FROM insurance.provider_call_minutes q
                  CROSS JOIN LATERAL pg_catalog.unnest(q.buckets) WITH ORDINALITY b(n, i)
                  WHERE q.minute = m.minute AND q.target = m.target
                  GROUP BY b.i ORDER BY b.i) AS buckets
      FROM insurance.provider_call_minutes m
     WHERE m.minute >= _from AND m.minute < _to
     GROUP BY m.target, m.minute
  ), targets AS (
    SELECT i.slug AS target FROM insurance.integrations i
    UNION SELECT z.provider FROM insurance.provider_pauses z WHERE z.until IS NULL OR z.until > pg_catalog.now()
    UNION SELECT p.target FROM per_minute p
    UNION SELECT 'WEBHOOKS'
  )
  SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'provider', t.target,
           'paused', (SELECT pg_catalog.jsonb_build_object('pausedAt', z.paused_at, 'until', z.until)
                        FROM insurance.provider_pauses z
                       WHERE z.provider = t.target AND (z.until IS NULL OR z.until > pg_catalog.now())),
           'calls', coalesce(w.calls, 0), 'failures', coalesce(w.failures, 0), 'p95Ms', dashboard._p95_ms(w.buckets),
           'minutes', coalesce(w.minutes, '[]'))
           ORDER BY t.target = 'WEBHOOKS', t.target)
    INTO _answer
    FROM targets t
    LEFT JOIN LATERAL (
      SELECT sum(p.calls) AS calls, sum(p.failures) AS failures,
             ARRAY(SELECT sum(b.n)::bigint FROM per_minute q
                    CROSS JOIN LATERAL pg_catalog.unnest(q.buckets) WITH ORDINALITY b(n, i)
                    WHERE q.target = t.target GROUP BY b.i ORDER BY b.i) AS buckets,
             pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'minute', p.minute, 'calls', p.calls, 'failures', p.failures, 'p95Ms', dashboard._p95_ms(p.buckets))
               ORDER BY p.minute) AS minutes
        FROM per_minute p WHERE p.target = t.target) w ON true;
  RETURN pg_catalog.jsonb_build_object('from', _from, 'to', _to, 'hours', _hours, 'providers', coalesce(_answer, '[]'));
END
$$;
COMMENT ON FUNCTION dashboard.providers_health(integer) IS
  'Each provider''s (configured, paused or called) and the webhooks'' (WEBHOOKS) health over the last _hours (1..24): '
  '{from, to, hours, providers: [{provider, paused {pausedAt, until} | null, calls, failures, p95Ms, minutes: '
  '[{minute, calls, failures, p95Ms}] (minutes without calls left out)}]}; raises PT400 VALIDATION_ERROR for hours '
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
