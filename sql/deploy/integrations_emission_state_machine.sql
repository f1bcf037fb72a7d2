-- Deploy insurance:integrations_emission_state_machine to pg
-- The emission upsert: transitions, backoff, metadata, retries and notices in one transaction.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- retry_pending: whether a /retry of the emission waits in the outbox.
CREATE FUNCTION integrations.retry_pending(_emission_id bigint) RETURNS boolean
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT EXISTS (SELECT FROM outbox.http_requests o
                  WHERE o.delivered_at IS NULL AND o.body ? 'emissionId'
                    AND (o.body ->> 'emissionId')::bigint = _emission_id
                    AND o.url = '/api/integrations/retry')
$$;
COMMENT ON FUNCTION integrations.retry_pending(bigint) IS
  'Whether a POST /api/integrations/retry of emission _emission_id waits in the outbox. Pipeline '
  'functions.';
-- Providers that misbehave never poison the pipeline:
--   * retry_delay clamps the provider's Retry-After to [0, retryCapSeconds] (an absurd one
--     overflowed make_interval into 22008 and failed the whole batch);
--   * provider text is stripped of control characters and cut before it is stored (2,000
--     characters in error_history, 300 in a chat notice); error_history keeps the masked
--     request payload for operators (at most 3,000 bytes of it);
--   * metadata.integration, which holders and partners read, tells the sales dispatch only
--     (a post-sales, beneficiaries-sync or welcome-mail emission leaves it alone) and carries
--     a code and a generic message, never the provider's text;
--   * record_batch stores every outcome it can: one that cannot be stored is recorded as
--     FAILED with code OUTCOME_UNRECORDABLE (retried like any failure) and never rolls back
--     the others;
--   * retry_from_backoffice checks the switched role (require_role).

-- retry_delay: exponential backoff with equal jitter for the n-th failed attempt:
-- d = min(cap, base * 2^(n-1)), a uniform delay in [d/2, d]; the provider's Retry-After
-- (seconds, clamped to [0, cap]) when it is longer.
CREATE FUNCTION integrations.retry_delay(_attempt integer, _base_seconds numeric, _cap_seconds numeric,
                                                    _retry_after numeric DEFAULT NULL) RETURNS interval
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _d numeric := least(_cap_seconds, _base_seconds * power(2::numeric, least(greatest(_attempt, 1) - 1, 40)));
BEGIN
  RETURN pg_catalog.make_interval(secs => greatest(
    _d / 2 + pg_catalog.random()::numeric * _d / 2,
    least(greatest(coalesce(_retry_after, 0), 0), _cap_seconds))::double precision);
END
$$;
COMMENT ON FUNCTION integrations.retry_delay(integer, numeric, numeric, numeric) IS
  'The backoff before retry _attempt: equal-jitter exponential min(cap, base * 2^(n-1)), or the '
  'provider''s Retry-After (clamped to [0, cap]) when longer. Service role.';
GRANT EXECUTE ON FUNCTION integrations.retry_delay(integer, numeric, numeric, numeric) TO insurance_service;

-- _clean_text: provider text fit to store: control characters (NUL cannot reach text)
-- removed, cut to _max characters and, for wide characters, to about _max bytes.
CREATE FUNCTION integrations._clean_text(_text text, _max integer) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = '' AS $$
DECLARE
  _out text := pg_catalog.left(pg_catalog.regexp_replace(_text, E'[\\x01-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f]', '', 'g'), _max);
BEGIN
  IF pg_catalog.octet_length(_out) > _max THEN
    _out := pg_catalog.left(_out, _max / 4);
  END IF;
  RETURN _out;
END
$$;
COMMENT ON FUNCTION integrations._clean_text(text, integer) IS
  'Provider text fit to store: control characters removed, cut to _max characters (and about _max '
  'bytes). Service role.';
GRANT EXECUTE ON FUNCTION integrations._clean_text(text, integer) TO insurance_service;

-- _record_outcomes: the state machine over a batch of outcomes whose keys all differ,
-- [{"riskItemId", "provider", "event", "outcome": OrchestratorResult.as_json()}], set-based, in
-- one transaction: the emissions upserted with their transitions (error_history: code,
-- cleaned message, HTTP status, masked request payload), risk_items.metadata.integration for
-- the sales dispatches, the chat notices (FAILED, ABANDONED) and delayed /retry (FAILED)
-- queued, the keys' claims given back. Returns [integrations.emission_json] in order. Raises
-- what any one outcome cannot satisfy (integrations.record_batch then records them one by
-- one); a key twice makes the upsert raise 21000.
-- Two statements whatever the batch's size (and the triggers': two emission_counts deltas, the
-- webhook events of the sales dispatches): the stored rows locked in key order (the order
-- every recorder takes them in, so that two batches never wait on each other in a cycle),
-- then the rest in one statement. Planned once per session, nested loops only (as
-- integrations.begin_batch: driven by the outcomes, every lookup is an index probe).
CREATE FUNCTION integrations._record_outcomes(_outcomes jsonb, _options jsonb) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  _max integer := coalesce((_options ->> 'maxAttempts')::integer, 8);
  _base numeric := coalesce((_options ->> 'retryBaseSeconds')::numeric, 60);
  _cap numeric := coalesce((_options ->> 'retryCapSeconds')::numeric, 21600);
  _chat text := nullif(_options ->> 'chatWebhookUrl', '');
  _by text := _options ->> 'claimedBy';
  _out jsonb;
  _posted bigint[];
BEGIN
  PERFORM FROM insurance.integration_emissions e
    JOIN pg_catalog.jsonb_array_elements(_outcomes) AS x(o)
      ON e.risk_item_id = (x.o ->> 'riskItemId')::bigint AND e.provider = x.o ->> 'provider'
     AND e.event = x.o ->> 'event'
   ORDER BY e.risk_item_id, e.provider, e.event
     FOR UPDATE OF e;

  WITH x AS (
    SELECT x.n, (x.o ->> 'riskItemId')::bigint AS item, x.o ->> 'provider' AS provider, x.o ->> 'event' AS event,
           x.o -> 'outcome' AS outcome
      FROM pg_catalog.jsonb_array_elements(_outcomes) WITH ORDINALITY AS x(o, n)
  ), a AS (
    SELECT x.*, old.e AS old,
           coalesce((old.e).status = 'SUCCESS', false) AS final,  -- a late or repeated outcome changes nothing
           coalesce(x.outcome ->> 'status' = 'SUCCESS', false) AS ok,
           coalesce((x.outcome ->> 'retryable')::boolean, false) AS retryable,
           coalesce((old.e).attempts, 0) + 1 AS attempts
      FROM x
      LEFT JOIN LATERAL (SELECT e FROM insurance.integration_emissions e
                          WHERE e.risk_item_id = x.item AND e.provider = x.provider AND e.event = x.event) old ON true
  ), t AS MATERIALIZED (
    SELECT a.*, s.status,
           CASE WHEN NOT a.final AND NOT a.ok THEN pg_catalog.jsonb_build_object(
             'at', pg_catalog.now(), 'attempt', a.attempts,
             'code', integrations._clean_text(coalesce(a.outcome ->> 'code', 'UNKNOWN'), 64),
             'message', integrations._clean_text(coalesce(a.outcome ->> 'message', ''), 2000),
             'httpStatus', (a.outcome ->> 'httpStatus')::integer, 'retryable', a.retryable,
             'requestPayload', CASE WHEN pg_catalog.octet_length((a.outcome -> 'requestPayload')::text) > 3000
                                    THEN pg_catalog.jsonb_build_object(
                                           'truncated', true,
                                           'bytes', pg_catalog.octet_length((a.outcome -> 'requestPayload')::text))
                                    ELSE a.outcome -> 'requestPayload' END) END AS error,
           CASE WHEN NOT a.final AND s.status = 'FAILED'
                THEN pg_catalog.now() + integrations.retry_delay(a.attempts, _base, _cap,
                                                                 (a.outcome ->> 'retryAfter')::numeric) END AS next
      FROM a
     CROSS JOIN LATERAL (SELECT CASE WHEN a.ok THEN 'SUCCESS'
                                     WHEN a.retryable AND a.attempts < _max THEN 'FAILED'
                                     ELSE 'ABANDONED' END AS status) s
  ), up AS (
    INSERT INTO insurance.integration_emissions AS e
           (risk_item_id, provider, event, status, external_id, response, error_history, next_retry_at, attempts)
    SELECT t.item, t.provider, t.event, t.status,
           CASE WHEN t.ok THEN t.outcome ->> 'externalId' END,
           CASE WHEN t.ok THEN coalesce(t.outcome -> 'response', 'null') END,
           CASE WHEN t.ok THEN '[]'::jsonb ELSE pg_catalog.jsonb_build_array(t.error) END,
           t.next, t.attempts
      FROM t
     WHERE NOT t.final
     ORDER BY t.n  -- new rows take their ids in the batch's order, as one call after the other gave them
    ON CONFLICT ON CONSTRAINT integration_emissions_risk_item_id_provider_event_key DO UPDATE
       SET status = excluded.status,
           external_id = coalesce(excluded.external_id, e.external_id),
           response = coalesce(excluded.response, e.response),
           error_history = e.error_history || excluded.error_history,
           next_retry_at = excluded.next_retry_at,
           attempts = excluded.attempts
    RETURNING e AS em
  ), done AS (
    SELECT t.*, coalesce(u.em, t.old) AS em
      FROM t LEFT JOIN up u ON NOT t.final AND (u.em).risk_item_id = t.item AND (u.em).provider = t.provider
                             AND (u.em).event = t.event
  ), given_back AS (
    DELETE FROM insurance.emission_claims c
     USING x
     WHERE c.risk_item_id = x.item AND c.provider = x.provider AND c.event = x.event
       AND (_by IS NULL OR c.claimed_by = _by)
  ), metadata AS (
    -- The specification's metadata.integration tells the sales dispatch; holders and partners
    -- read it, so its error is a code and a generic message. (An item's last outcome in the
    -- batch wins, as it would one call after the other.)
    UPDATE insurance.risk_items r
       SET metadata = pg_catalog.jsonb_set(r.metadata, '{integration}', pg_catalog.jsonb_build_object(
             'state', d.status, 'externalId', (d.em).external_id, 'emissionId', (d.em).id, 'provider', d.provider,
             'event', d.event, 'updatedAt', pg_catalog.now(),
             'error', CASE WHEN d.error IS NOT NULL THEN pg_catalog.jsonb_build_object(
                        'code', d.error -> 'code', 'httpStatus', d.error -> 'httpStatus',
                        'retryable', d.retryable, 'at', d.error -> 'at',
                        'message', CASE WHEN d.status = 'FAILED'
                                        THEN 'The insurer could not take the policy yet; it will be retried.'
                                        ELSE 'The insurer did not take the policy.' END) END))
      FROM (SELECT DISTINCT ON (d.item) d.* FROM done d
             WHERE d.event = 'SALES_DISPATCH' AND NOT d.final ORDER BY d.item, d.n DESC) d
     WHERE r.id = d.item
  )
  SELECT coalesce((SELECT pg_catalog.jsonb_agg(integrations.emission_json(d.em) ORDER BY d.n) FROM done d), '[]'),
         (SELECT outbox.http_post_all(pg_catalog.array_agg(p.url ORDER BY p.n, p.k),
                                      pg_catalog.array_agg(p.body ORDER BY p.n, p.k),
                                      pg_catalog.array_agg('{}'::jsonb ORDER BY p.n, p.k),
                                      pg_catalog.array_agg(p.at ORDER BY p.n, p.k))
            FROM (SELECT d.n, 1 AS k, '/api/integrations/retry' AS url,
                         pg_catalog.jsonb_build_object('emissionId', (d.em).id) AS body, d.next AS at
                    FROM done d WHERE NOT d.final AND d.status = 'FAILED'
                  UNION ALL
                  SELECT d.n, 2, _chat,
                         integrations.chat_message(d.provider, d.event, r.uid, d.status, d.error ->> 'code',
                                                   pg_catalog.left(d.error ->> 'message', 300), d.attempts, _max,
                                                   d.next), NULL
                    FROM done d LEFT JOIN insurance.risk_items r ON r.id = d.item
                   WHERE _chat IS NOT NULL AND NOT d.final AND d.status <> 'SUCCESS') p
          HAVING count(*) > 0)
    INTO _out, _posted;
  RETURN _out;
END
$$;
COMMENT ON FUNCTION integrations._record_outcomes(jsonb, jsonb) IS
  'Takes outcomes [{riskItemId, provider, event, outcome}] of distinct keys and the options; applies the state '
  'machine to all of them set-based (emission upserts, metadata.integration, chat notices, delayed /retry, claims '
  'given back); returns [integrations.emission_json] in order; raises what any outcome cannot satisfy. Private '
  'helper of record_emission and record_batch (service role).';
REVOKE ALL ON FUNCTION integrations._record_outcomes(jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations._record_outcomes(jsonb, jsonb) TO insurance_service;

-- record_emission: the orchestrator's outcome (OrchestratorResult.as_json()) for the key, in
-- one transaction: integrations._record_outcomes of one. Returns integrations.emission_json.
CREATE FUNCTION integrations.record_emission(_risk_item_id bigint, _provider text, _event text,
                                                        _outcome jsonb, _options jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  RETURN integrations._record_outcomes(pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
           'riskItemId', _risk_item_id, 'provider', _provider, 'event', _event, 'outcome', _outcome)), _options) -> 0;
END
$$;
COMMENT ON FUNCTION integrations.record_emission(bigint, text, text, jsonb, jsonb) IS
  'Records an orchestrator outcome for the key in one transaction: the emission upsert and its '
  'transition (SUCCESS final; FAILED with backoff and a delayed /retry; ABANDONED), '
  'metadata.integration for the sales dispatch, chat notices, the claim given back; returns '
  'integrations.emission_json. Service role.';
GRANT EXECUTE ON FUNCTION integrations.record_emission(bigint, text, text, jsonb, jsonb) TO insurance_service;

-- record_batch: the outcomes of a batch in one transaction, answers in order.
-- outcomes: [{"riskItemId", "provider", "event", "outcome": OrchestratorResult.as_json()}]
-- All of them set-based (integrations._record_outcomes) when that stores them; when it raises,
-- or a key repeats within the batch, one by one in order (record_emission each, as many calls
-- in a row would), an outcome that cannot be stored becoming FAILED OUTCOME_UNRECORDABLE.
CREATE FUNCTION integrations.record_batch(_outcomes jsonb, _options jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _out jsonb := '[]';
  _o jsonb;
  _one jsonb;
  _state text;
  _unrecordable jsonb;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  BEGIN
    IF EXISTS (SELECT FROM pg_catalog.jsonb_array_elements(_outcomes) AS x(o)
                GROUP BY (x.o ->> 'riskItemId')::bigint, x.o ->> 'provider', x.o ->> 'event'
               HAVING count(*) > 1) THEN
      RAISE EXCEPTION USING ERRCODE = '21000', MESSAGE = 'a key repeats within the batch';
    END IF;
    RETURN integrations._record_outcomes(_outcomes, _options);
  EXCEPTION WHEN OTHERS THEN
    NULL;  -- rolled back to here: recorded one by one below
  END;
  FOR _o IN SELECT o FROM pg_catalog.jsonb_array_elements(_outcomes) WITH ORDINALITY AS x(o, n) ORDER BY n LOOP
    BEGIN
      _one := integrations.record_emission((_o ->> 'riskItemId')::bigint, _o ->> 'provider', _o ->> 'event',
                                           _o -> 'outcome', _options);
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS _state = RETURNED_SQLSTATE;
      _unrecordable := pg_catalog.jsonb_build_object(
        'status', 'FAILED', 'code', 'OUTCOME_UNRECORDABLE', 'retryable', true,
        'message', 'the outcome could not be stored (SQLSTATE ' || _state || ')');
      BEGIN
        _one := integrations.record_emission((_o ->> 'riskItemId')::bigint, _o ->> 'provider', _o ->> 'event',
                                             _unrecordable, _options);
      EXCEPTION WHEN OTHERS THEN
        BEGIN
          DELETE FROM insurance.emission_claims c
           WHERE c.risk_item_id = (_o ->> 'riskItemId')::bigint AND c.provider = _o ->> 'provider'
             AND c.event = _o ->> 'event';
        EXCEPTION WHEN OTHERS THEN
          NULL;  -- a key that is not even a key: there is no claim to give back
        END;
        _one := pg_catalog.jsonb_build_object(
          'emissionId', NULL, 'riskItemId', _o -> 'riskItemId', 'provider', _o -> 'provider',
          'event', _o -> 'event', 'status', 'FAILED', 'externalId', NULL, 'attempts', NULL,
          'nextRetryAt', NULL, 'error', _unrecordable - 'status');
      END;
    END;
    _out := _out || pg_catalog.jsonb_build_array(_one);
  END LOOP;
  RETURN _out;
END
$$;
COMMENT ON FUNCTION integrations.record_batch(jsonb, jsonb) IS
  'Records each outcome [{riskItemId, provider, event, outcome}] (set-based; one by one as record_emission when '
  'that raises or a key repeats), answers in order; one that cannot be stored becomes FAILED OUTCOME_UNRECORDABLE '
  'without rolling back the others. Service role.';
GRANT EXECUTE ON FUNCTION integrations.record_batch(jsonb, jsonb) TO insurance_service, insurance_app;

-- retry_from_backoffice: the retry an operator asks for. No role may call it directly: the
-- dashboard's dashboard.retry_emissions (SECURITY DEFINER, audited) calls it for the
-- dashboard session, and the guard checks that session's role.
CREATE FUNCTION integrations.retry_from_backoffice(_emission_ids bigint[]) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _id bigint;
  _em insurance.integration_emissions;
  _queued boolean;
  _out jsonb := '[]';
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  FOREACH _id IN ARRAY coalesce(_emission_ids, '{}') LOOP
    SELECT * INTO _em FROM insurance.integration_emissions e WHERE e.id = _id FOR UPDATE;
    IF NOT FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'emission not found', DETAIL = 'NOT_FOUND',
                            HINT = pg_catalog.jsonb_build_object('id', _id)::text;
    END IF;
    _queued := false;
    IF _em.status IN ('FAILED', 'ABANDONED') THEN
      UPDATE insurance.integration_emissions e
         SET status = 'FAILED', next_retry_at = pg_catalog.now(),
             attempts = CASE WHEN e.status = 'ABANDONED' THEN 0 ELSE e.attempts END
       WHERE e.id = _id RETURNING * INTO _em;
      -- A pending delayed /retry is brought forward; otherwise a new one is enqueued.
      UPDATE outbox.http_requests o SET deliver_after = pg_catalog.now()
       WHERE o.delivered_at IS NULL AND o.body ? 'emissionId' AND (o.body ->> 'emissionId')::bigint = _id
         AND o.url = '/api/integrations/retry' AND o.deliver_after > pg_catalog.now();
      IF FOUND THEN
        PERFORM pg_catalog.pg_notify('outbox', '');
      ELSIF NOT integrations.retry_pending(_id) THEN
        PERFORM outbox.http_post('/api/integrations/retry', pg_catalog.jsonb_build_object('emissionId', _id),
                                 '{}', NULL);
      END IF;
      _queued := true;
    END IF;
    _out := _out || pg_catalog.jsonb_build_array(
                      pg_catalog.jsonb_build_object('id', _id, 'status', _em.status, 'queued', _queued));
  END LOOP;
  RETURN _out;
END
$$;
COMMENT ON FUNCTION integrations.retry_from_backoffice(bigint[]) IS
  'Restarts emissions _emission_ids (FAILED and ABANDONED become FAILED, due now; ABANDONED attempts '
  'from 0) and queues their /retry; returns [{id, status, queued}]; raises PT404 for an unknown id. No '
  'role: dashboard.retry_emissions only.';
REVOKE ALL ON FUNCTION integrations.retry_from_backoffice(bigint[]) FROM PUBLIC;
COMMIT;
