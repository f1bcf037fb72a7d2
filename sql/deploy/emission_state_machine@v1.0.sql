-- Deploy insurance:emission_state_machine to pg
-- requires: emission_claims
-- requires: chat_notifications
-- The emission state machine (DESIGN.md), one transaction per outcome:
--   (none)|FAILED -> SUCCESS     the provider accepted it; final
--   (none)|FAILED -> FAILED      retryable error and attempts < max: attempts + 1,
--                                next_retry_at from the backoff, /retry enqueued, chat notice
--   (none)|FAILED -> ABANDONED   not retryable, or attempts reach max: chat notice, no retry
--   SUCCESS -> SUCCESS           a repeated outcome changes nothing
--   ABANDONED -> FAILED          only integrations.retry_from_backoffice (the dashboard)
-- Settings reach SQL as an argument (options jsonb), from the app's Config:
--   {"maxAttempts": 8, "retryBaseSeconds": 60, "retryCapSeconds": 21600, "chatWebhookUrl": "", "claimedBy": "..."}
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE POLICY integration_emissions_insert_service ON insurance.integration_emissions
  FOR INSERT TO insurance_service WITH CHECK (true);
CREATE POLICY integration_emissions_update_service ON insurance.integration_emissions
  FOR UPDATE TO insurance_service USING (true) WITH CHECK (true);
-- metadata.integration is written by the service role.
CREATE POLICY risk_items_update_service ON insurance.risk_items
  FOR UPDATE TO insurance_service USING (true) WITH CHECK (true);

-- retry_delay: exponential backoff with equal jitter for the n-th failed attempt:
-- d = min(cap, base * 2^(n-1)), a uniform delay in [d/2, d]; the provider's Retry-After
-- (seconds) when it is longer.
CREATE FUNCTION integrations.retry_delay(attempt integer, base_seconds numeric, cap_seconds numeric,
                                         retry_after numeric DEFAULT NULL) RETURNS interval
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _d numeric := least(cap_seconds, base_seconds * power(2::numeric, least(greatest(attempt, 1) - 1, 40)));
BEGIN
  RETURN pg_catalog.make_interval(secs => greatest(_d / 2 + pg_catalog.random()::numeric * _d / 2,
                                                   coalesce(retry_after, 0))::double precision);
END
$$;
GRANT EXECUTE ON FUNCTION integrations.retry_delay(integer, numeric, numeric, numeric) TO insurance_service;

-- record_emission: the orchestrator's outcome (OrchestratorResult.as_json()) for the key, in
-- one transaction: upsert the emission, update risk_items.metadata.integration (not for
-- MAIL_PROVIDER, which issues no policy), enqueue the chat notice (FAILED, ABANDONED) and the
-- delayed /retry (FAILED), give the key's claim back. Returns integrations.emission_json.
CREATE FUNCTION integrations.record_emission(risk_item_id bigint, provider text, event text,
                                             outcome jsonb, options jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _max integer := coalesce((options ->> 'maxAttempts')::integer, 8);
  _base numeric := coalesce((options ->> 'retryBaseSeconds')::numeric, 60);
  _cap numeric := coalesce((options ->> 'retryCapSeconds')::numeric, 21600);
  _chat text := nullif(options ->> 'chatWebhookUrl', '');
  _old insurance.integration_emissions;
  _em insurance.integration_emissions;
  _ok boolean := outcome ->> 'status' = 'SUCCESS';
  _attempts integer;
  _status text;
  _next timestamptz;
  _error jsonb;
  _uid uuid;
BEGIN
  SELECT * INTO _old FROM insurance.integration_emissions e
   WHERE e.risk_item_id = record_emission.risk_item_id AND e.provider = record_emission.provider
     AND e.event = record_emission.event
   FOR UPDATE;

  DELETE FROM insurance.emission_claims c
   WHERE c.risk_item_id = record_emission.risk_item_id AND c.provider = record_emission.provider
     AND c.event = record_emission.event
     AND (options ->> 'claimedBy' IS NULL OR c.claimed_by = options ->> 'claimedBy');

  IF _old.status = 'SUCCESS' THEN  -- final: a late or repeated outcome changes nothing
    RETURN integrations.emission_json(_old);
  END IF;

  _attempts := coalesce(_old.attempts, 0) + 1;
  IF _ok THEN
    _status := 'SUCCESS';
  ELSE
    _error := pg_catalog.jsonb_build_object(
      'at', pg_catalog.now(), 'attempt', _attempts, 'code', coalesce(outcome ->> 'code', 'UNKNOWN'),
      'message', coalesce(outcome ->> 'message', ''), 'httpStatus', (outcome ->> 'httpStatus')::integer,
      'retryable', coalesce((outcome ->> 'retryable')::boolean, false));
    IF coalesce((outcome ->> 'retryable')::boolean, false) AND _attempts < _max THEN
      _status := 'FAILED';
      _next := pg_catalog.now() + integrations.retry_delay(_attempts, _base, _cap,
                                                           (outcome ->> 'retryAfter')::numeric);
    ELSE
      _status := 'ABANDONED';
    END IF;
  END IF;

  INSERT INTO insurance.integration_emissions AS e
         (risk_item_id, provider, event, status, external_id, response, error_history, next_retry_at, attempts)
  VALUES (risk_item_id, provider, event, _status,
          CASE WHEN _ok THEN outcome ->> 'externalId' END,
          CASE WHEN _ok THEN coalesce(outcome -> 'response', 'null') END,
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

  UPDATE insurance.risk_items r
     SET metadata = pg_catalog.jsonb_set(r.metadata, '{integration}', pg_catalog.jsonb_build_object(
           'state', _status, 'externalId', _em.external_id, 'emissionId', _em.id, 'provider', provider,
           'event', event, 'error', _error, 'updatedAt', pg_catalog.now()))
   WHERE r.id = record_emission.risk_item_id AND provider <> 'MAIL_PROVIDER'
  RETURNING r.uid INTO _uid;

  IF _status = 'FAILED' THEN
    PERFORM outbox.http_post('/api/integrations/retry', pg_catalog.jsonb_build_object('emissionId', _em.id),
                             '{}', _next);
  END IF;
  IF _status <> 'SUCCESS' AND _chat IS NOT NULL THEN
    IF _uid IS NULL THEN
      SELECT r.uid INTO _uid FROM insurance.risk_items r WHERE r.id = record_emission.risk_item_id;
    END IF;
    PERFORM outbox.http_post(_chat, integrations.chat_message(provider, event, _uid, _status,
                                                              _error ->> 'code', _error ->> 'message',
                                                              _attempts, _max, _next), '{}', NULL);
  END IF;
  RETURN integrations.emission_json(_em);
END
$$;
GRANT EXECUTE ON FUNCTION integrations.record_emission(bigint, text, text, jsonb, jsonb)
   TO insurance_service, insurance_app;

-- record_batch: record_emission for each outcome, in one transaction, answers in order.
-- outcomes: [{"riskItemId", "provider", "event", "outcome": OrchestratorResult.as_json()}]
CREATE FUNCTION integrations.record_batch(outcomes jsonb, options jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE sql SET search_path = '' AS $$
  SELECT coalesce(pg_catalog.jsonb_agg(
           integrations.record_emission((o ->> 'riskItemId')::bigint, o ->> 'provider', o ->> 'event',
                                        o -> 'outcome', options) ORDER BY n), '[]')
    FROM pg_catalog.jsonb_array_elements(outcomes) WITH ORDINALITY AS x(o, n)
$$;
GRANT EXECUTE ON FUNCTION integrations.record_batch(jsonb, jsonb) TO insurance_service, insurance_app;

-- retry_pending: whether a /retry of the emission waits in the outbox.
CREATE FUNCTION integrations.retry_pending(emission_id bigint) RETURNS boolean
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT EXISTS (SELECT FROM outbox.http_requests o
                  WHERE o.delivered_at IS NULL AND o.body ? 'emissionId'
                    AND (o.body ->> 'emissionId')::bigint = emission_id
                    AND o.url = '/api/integrations/retry')
$$;

-- retry_from_backoffice: the dashboard's retry of emissions. A FAILED or ABANDONED emission
-- becomes FAILED and due now (an ABANDONED one restarts with attempts = 0) and gets the same
-- outbox /retry call as an automatic retry (unless one is already pending); SUCCESS is left
-- alone. Returns [{id, status, queued}] in the order given; an unknown id raises PT404
-- NOT_FOUND and changes nothing. Runs as the owner: the dashboard role may not write emissions.
CREATE FUNCTION integrations.retry_from_backoffice(emission_ids bigint[]) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _id bigint;
  _em insurance.integration_emissions;
  _queued boolean;
  _out jsonb := '[]';
BEGIN
  FOREACH _id IN ARRAY coalesce(emission_ids, '{}') LOOP
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
REVOKE ALL ON FUNCTION integrations.retry_from_backoffice(bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations.retry_from_backoffice(bigint[]) TO insurance_dashboard, insurance_app;

COMMIT;
