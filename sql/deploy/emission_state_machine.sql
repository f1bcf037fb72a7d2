-- Deploy insurance:emission_state_machine to pg
-- requires: emission_claims
-- requires: chat_notifications
-- The emission upsert: transitions, backoff, metadata, retries and notices in one transaction.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- The emission state machine (DESIGN.md), one transaction per outcome:
--   (none)|FAILED -> SUCCESS     the provider accepted it; final
--   (none)|FAILED -> FAILED      retryable error and attempts < max: attempts + 1,
--                                next_retry_at from the backoff, /retry enqueued, chat notice
--   (none)|FAILED -> ABANDONED   not retryable, or attempts reach max: chat notice, no retry
--   SUCCESS -> SUCCESS           a repeated outcome changes nothing
--   ABANDONED -> FAILED          only integrations.retry_from_backoffice (the dashboard)
-- Settings reach SQL as an argument (options jsonb), from the app's Config:
--   {"maxAttempts": 8, "retryBaseSeconds": 60, "retryCapSeconds": 21600, "chatWebhookUrl": "", "claimedBy": "..."}

CREATE POLICY integration_emissions_insert_service ON insurance.integration_emissions
  FOR INSERT TO insurance_service WITH CHECK (true);
CREATE POLICY integration_emissions_update_service ON insurance.integration_emissions
  FOR UPDATE TO insurance_service USING (true) WITH CHECK (true);
-- metadata.integration is written by the service role.
CREATE POLICY risk_items_update_service ON insurance.risk_items
  FOR UPDATE TO insurance_service USING (true) WITH CHECK (true);

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

-- record_emission: the orchestrator's outcome (OrchestratorResult.as_json()) for the key, in
-- one transaction: upsert the emission (error_history: code, cleaned message, HTTP status,
-- masked request payload), update risk_items.metadata.integration for the sales dispatch,
-- enqueue the chat notice (FAILED, ABANDONED) and the delayed /retry (FAILED), give the
-- key's claim back. Returns integrations.emission_json.
CREATE FUNCTION integrations.record_emission(_risk_item_id bigint, _provider text, _event text,
                                                        _outcome jsonb, _options jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _max integer := coalesce((_options ->> 'maxAttempts')::integer, 8);
  _base numeric := coalesce((_options ->> 'retryBaseSeconds')::numeric, 60);
  _cap numeric := coalesce((_options ->> 'retryCapSeconds')::numeric, 21600);
  _chat text := nullif(_options ->> 'chatWebhookUrl', '');
  _old insurance.integration_emissions;
  _em insurance.integration_emissions;
  _ok boolean := _outcome ->> 'status' = 'SUCCESS';
  _retryable boolean := coalesce((_outcome ->> 'retryable')::boolean, false);
  _attempts integer;
  _status text;
  _next timestamptz;
  _error jsonb;
  _payload jsonb := _outcome -> 'requestPayload';
  _uid uuid;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  SELECT * INTO _old FROM insurance.integration_emissions e
   WHERE e.risk_item_id = _risk_item_id AND e.provider = _provider
     AND e.event = _event
   FOR UPDATE;

  DELETE FROM insurance.emission_claims c
   WHERE c.risk_item_id = _risk_item_id AND c.provider = _provider
     AND c.event = _event
     AND (_options ->> 'claimedBy' IS NULL OR c.claimed_by = _options ->> 'claimedBy');

  IF _old.status = 'SUCCESS' THEN  -- final: a late or repeated outcome changes nothing
    RETURN integrations.emission_json(_old);
  END IF;

  _attempts := coalesce(_old.attempts, 0) + 1;
  IF _ok THEN
    _status := 'SUCCESS';
  ELSE
    IF pg_catalog.octet_length(_payload::text) > 3000 THEN
      _payload := pg_catalog.jsonb_build_object('truncated', true, 'bytes', pg_catalog.octet_length(_payload::text));
    END IF;
    _error := pg_catalog.jsonb_build_object(
      'at', pg_catalog.now(), 'attempt', _attempts,
      'code', integrations._clean_text(coalesce(_outcome ->> 'code', 'UNKNOWN'), 64),
      'message', integrations._clean_text(coalesce(_outcome ->> 'message', ''), 2000),
      'httpStatus', (_outcome ->> 'httpStatus')::integer, 'retryable', _retryable,
      'requestPayload', _payload);
    IF _retryable AND _attempts < _max THEN
      _status := 'FAILED';
      _next := pg_catalog.now() + integrations.retry_delay(_attempts, _base, _cap,
                                                           (_outcome ->> 'retryAfter')::numeric);
    ELSE
      _status := 'ABANDONED';
    END IF;
  END IF;

  INSERT INTO insurance.integration_emissions AS e
         (risk_item_id, provider, event, status, external_id, response, error_history, next_retry_at, attempts)
  VALUES (_risk_item_id, _provider, _event, _status,
          CASE WHEN _ok THEN _outcome ->> 'externalId' END,
          CASE WHEN _ok THEN coalesce(_outcome -> 'response', 'null') END,
          CASE WHEN _ok THEN '[]'::jsonb ELSE pg_catalog.jsonb_build_array(_error) END,
          _next, _attempts)
  ON CONFLICT ON CONSTRAINT integration_emissions_risk_item_id_provider_event_key DO UPDATE
     SET status = excluded.status,
         external_id = coalesce(excluded.external_id, e.external_id),
         response = coalesce(excluded.response, e.response),
         error_history = e.error_history || excluded.error_history,
         next_retry_at = excluded.next_retry_at,
         attempts = excluded.attempts
  RETURNING * INTO _em;

  -- The specification's metadata.integration tells the sales dispatch; holders and partners
  -- read it, so its error is a code and a generic message.
  IF _event = 'SALES_DISPATCH' THEN
    UPDATE insurance.risk_items r
       SET metadata = pg_catalog.jsonb_set(r.metadata, '{integration}', pg_catalog.jsonb_build_object(
             'state', _status, 'externalId', _em.external_id, 'emissionId', _em.id, 'provider', _provider,
             'event', _event, 'updatedAt', pg_catalog.now(),
             'error', CASE WHEN _error IS NOT NULL THEN pg_catalog.jsonb_build_object(
                        'code', _error -> 'code', 'httpStatus', _error -> 'httpStatus',
                        'retryable', _retryable, 'at', _error -> 'at',
                        'message', CASE WHEN _status = 'FAILED'
                                        THEN 'The insurer could not take the policy yet; it will be retried.'
                                        ELSE 'The insurer did not take the policy.' END) END))
     WHERE r.id = _risk_item_id
    RETURNING r.uid INTO _uid;
  END IF;

  IF _status = 'FAILED' THEN
    PERFORM outbox.http_post('/api/integrations/retry', pg_catalog.jsonb_build_object('emissionId', _em.id),
                             '{}', _next);
  END IF;
  IF _status <> 'SUCCESS' AND _chat IS NOT NULL THEN
    IF _uid IS NULL THEN
      SELECT r.uid INTO _uid FROM insurance.risk_items r WHERE r.id = _risk_item_id;
    END IF;
    PERFORM outbox.http_post(_chat, integrations.chat_message(_provider, _event, _uid, _status,
                                                              _error ->> 'code', pg_catalog.left(_error ->> 'message', 300),
                                                              _attempts, _max, _next), '{}', NULL);
  END IF;
  RETURN integrations.emission_json(_em);
END
$$;
COMMENT ON FUNCTION integrations.record_emission(bigint, text, text, jsonb, jsonb) IS
  'Records an orchestrator outcome for the key in one transaction: the emission upsert and its '
  'transition (SUCCESS final; FAILED with backoff and a delayed /retry; ABANDONED), '
  'metadata.integration for the sales dispatch, chat notices, the claim given back; returns '
  'integrations.emission_json. Service role.';
GRANT EXECUTE ON FUNCTION integrations.record_emission(bigint, text, text, jsonb, jsonb)
   TO insurance_service, insurance_app;

-- record_batch: record_emission for each outcome, in one transaction, answers in order.
-- outcomes: [{"riskItemId", "provider", "event", "outcome": OrchestratorResult.as_json()}]
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
    SELECT coalesce(pg_catalog.jsonb_agg(
             integrations.record_emission((o ->> 'riskItemId')::bigint, o ->> 'provider', o ->> 'event',
                                          o -> 'outcome', _options) ORDER BY n), '[]')
      INTO _out
      FROM pg_catalog.jsonb_array_elements(_outcomes) WITH ORDINALITY AS x(o, n);
    RETURN _out;
  EXCEPTION WHEN OTHERS THEN
    _out := '[]';
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
  'integrations.record_emission for each outcome [{riskItemId, provider, event, outcome}] in order; one'
  ' that cannot be stored becomes FAILED OUTCOME_UNRECORDABLE without rolling back the others. Service '
  'role.';
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