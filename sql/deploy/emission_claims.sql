-- Deploy insurance:emission_claims to pg
-- requires: integration_emissions
-- requires: authorized_claimants
-- requires: standard_risk_item
-- requires: orders
-- At most one provider call per emission key, none after SUCCESS.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- At most one provider call per emission key at a time, and none after SUCCESS: a caller
-- claims the key (risk_item_id, provider, event) with a lease before it calls the provider;
-- integrations.record_emission gives the claim back in the transaction that records the
-- outcome. A crashed caller's lease expires, so that a key is never blocked for ever.

CREATE TABLE insurance.emission_claims (
  risk_item_id bigint NOT NULL REFERENCES insurance.risk_items ON DELETE CASCADE,
  provider     text NOT NULL,
  event        text NOT NULL,
  claimed_by   text NOT NULL,
  lease_until  timestamptz NOT NULL,
  PRIMARY KEY (risk_item_id, provider, event)
);
COMMENT ON TABLE insurance.emission_claims IS 'Keys whose provider call is in flight, with a lease that expires';
GRANT SELECT, INSERT, UPDATE, DELETE ON insurance.emission_claims TO insurance_service;

CREATE POLICY integration_emissions_select_service ON insurance.integration_emissions
  FOR SELECT TO insurance_service USING (true);
-- emission_json: an emission as the integration endpoints answer it.
CREATE FUNCTION integrations.emission_json(_e insurance.integration_emissions) RETURNS jsonb
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT jsonb_build_object(
    'emissionId', _e.id, 'riskItemId', _e.risk_item_id, 'provider', _e.provider, 'event', _e.event,
    'status', _e.status, 'externalId', _e.external_id, 'attempts', _e.attempts,
    'nextRetryAt', _e.next_retry_at,
    'error', CASE WHEN _e.status <> 'SUCCESS' THEN _e.error_history -> -1 END);
END;
COMMENT ON FUNCTION integrations.emission_json(insurance.integration_emissions) IS
  'One emission as the integration endpoints answer it (error: the newest error_history entry unless '
  'SUCCESS). Inlined; service and dashboard roles.';
GRANT EXECUTE ON FUNCTION integrations.emission_json(insurance.integration_emissions)
   TO insurance_service, insurance_dashboard;
-- begin_emission: claim the key before a provider call. provider NULL means the package's
-- slug for the event (SALES_DISPATCH: sales_integration_slug, POST_SALES:
-- post_sales_integration_slug, POLICY_CREATED: MAIL_PROVIDER). Answers
--   {"claimed": true, "idempotencyKey": "<uid>:<provider>:<event>", "item": <StandardRiskItem>, ...}
--                                                      call the provider
--   {"claimed": false, "status": "skipped", ...}        no slug: nothing to call
--   {"claimed": false, "status": "SUCCESS"|"ABANDONED"|"FAILED", ...}  stored outcome
--      (SUCCESS is final, ABANDONED waits for a dashboard retry, FAILED until next_retry_at)
--   {"claimed": false, "status": "IN_PROGRESS", ...}   another caller holds the key
-- Raises PT404 RISK_ITEM_NOT_FOUND for an unknown item.
CREATE FUNCTION integrations.begin_emission(_risk_item_id bigint, _provider text, _event text,
                                            _claimed_by text, _lease_seconds integer DEFAULT 60) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _uid uuid;
  _sales text;
  _post_sales text;
  _slug text := _provider;
  _em insurance.integration_emissions;
  _key jsonb;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  SELECT r.uid, p.sales_integration_slug, p.post_sales_integration_slug
    INTO _uid, _sales, _post_sales
    FROM insurance.risk_items r JOIN insurance.packages p ON p.id = r.package_id
   WHERE r.id = _risk_item_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'RISK_ITEM_NOT_FOUND';
  END IF;
  _slug := coalesce(_slug, CASE _event WHEN 'SALES_DISPATCH' THEN _sales
                                              WHEN 'POST_SALES' THEN _post_sales
                                              WHEN 'POLICY_CREATED' THEN 'MAIL_PROVIDER' END);
  _key := pg_catalog.jsonb_build_object('riskItemId', _risk_item_id, 'riskItemUid', _uid,
                                        'provider', _slug, 'event', _event);
  IF _slug IS NULL THEN
    RETURN _key || '{"claimed": false, "status": "skipped", "emissionId": null}';
  END IF;

  -- Claim first, then read the emission: a caller that recorded SUCCESS gave its claim back
  -- in the same transaction, so whoever claims after it sees the SUCCESS.
  INSERT INTO insurance.emission_claims AS c (risk_item_id, provider, event, claimed_by, lease_until)
  VALUES (_risk_item_id, _slug, _event, _claimed_by,
          pg_catalog.clock_timestamp() + pg_catalog.make_interval(secs => _lease_seconds))
  ON CONFLICT ON CONSTRAINT emission_claims_pkey DO UPDATE
     SET claimed_by = excluded.claimed_by, lease_until = excluded.lease_until
   WHERE c.lease_until < pg_catalog.clock_timestamp();
  IF NOT FOUND THEN
    SELECT * INTO _em FROM insurance.integration_emissions e
     WHERE e.risk_item_id = _risk_item_id AND e.provider = _slug AND e.event = _event;
    RETURN _key || '{"claimed": false, "status": "IN_PROGRESS"}'
                || pg_catalog.jsonb_build_object('emissionId', _em.id);
  END IF;

  SELECT * INTO _em FROM insurance.integration_emissions e
   WHERE e.risk_item_id = _risk_item_id AND e.provider = _slug AND e.event = _event;
  IF _em.status = 'SUCCESS' OR _em.status = 'ABANDONED'
     OR (_em.status = 'FAILED' AND _em.next_retry_at > pg_catalog.now()) THEN
    DELETE FROM insurance.emission_claims c
     WHERE c.risk_item_id = _risk_item_id AND c.provider = _slug AND c.event = _event;
    RETURN _key || integrations.emission_json(_em) || '{"claimed": false}';
  END IF;
  -- The caller needs the StandardRiskItem next: it comes in the same round trip.
  RETURN _key || pg_catalog.jsonb_build_object(
    'claimed', true, 'emissionId', _em.id, 'status', _em.status, 'attempts', coalesce(_em.attempts, 0),
    'idempotencyKey', _uid || ':' || _slug || ':' || _event,
    'item', integrations.standard_risk_item(_risk_item_id));
END
$$;
COMMENT ON FUNCTION integrations.begin_emission(bigint, text, text, text, integer) IS
  'Claims emission key (item, provider or the package''s slug for the event, event) for a provider call'
  ' with a lease; returns {claimed: true, idempotencyKey, item} or {claimed: false, status: '
  'skipped|SUCCESS|FAILED|ABANDONED|IN_PROGRESS, ...}; raises PT404 RISK_ITEM_NOT_FOUND. Service role.';
GRANT EXECUTE ON FUNCTION integrations.begin_emission(bigint, text, text, text, integer)
   TO insurance_service, insurance_app;
-- begin_order_emission: the key of an order's event (dispatch-v2, initial mode), claimed.
CREATE FUNCTION integrations.begin_order_emission(_order_id bigint, _claimed_by text,
                                                  _lease_seconds integer DEFAULT 60) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _order insurance.orders;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  SELECT * INTO _order FROM insurance.orders o WHERE o.id = _order_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'order not found', DETAIL = 'ORDER_NOT_FOUND';
  END IF;
  RETURN integrations.begin_emission(_order.risk_item_id, NULL, _order.event, _claimed_by, _lease_seconds)
         || pg_catalog.jsonb_build_object('orderId', _order.id);
END
$$;
COMMENT ON FUNCTION integrations.begin_order_emission(bigint, text, integer) IS
  'integrations.begin_emission for order _order_id''s event (dispatch-v2, initial mode); raises PT404 '
  'ORDER_NOT_FOUND. Service role.';
GRANT EXECUTE ON FUNCTION integrations.begin_order_emission(bigint, text, integer)
   TO insurance_service, insurance_app;
-- begin_emission_retry: the key of an existing emission (/retry, dispatch-v2 retry mode), claimed.
CREATE FUNCTION integrations.begin_emission_retry(_emission_id bigint, _claimed_by text,
                                                  _lease_seconds integer DEFAULT 60) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _em insurance.integration_emissions;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  SELECT * INTO _em FROM insurance.integration_emissions e WHERE e.id = _emission_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'emission not found', DETAIL = 'EMISSION_NOT_FOUND';
  END IF;
  RETURN integrations.begin_emission(_em.risk_item_id, _em.provider, _em.event, _claimed_by, _lease_seconds);
END
$$;
COMMENT ON FUNCTION integrations.begin_emission_retry(bigint, text, integer) IS
  'integrations.begin_emission for the key of emission _emission_id (/retry, dispatch-v2 retry mode); '
  'raises PT404 EMISSION_NOT_FOUND. Service role.';
GRANT EXECUTE ON FUNCTION integrations.begin_emission_retry(bigint, text, integer)
   TO insurance_service, insurance_app;
-- begin_batch: many claims in one transaction (the outbox worker's batched dispatches).
-- specs: [{"riskItemId" and/or "riskItemUid", "provider", "event"} | {"orderId"} | {"emissionId"}];
-- answers the begin_* result of each, in order, or {"refused": {"status": 404, "code", "message"}}
-- (also for an id and a uid that name two different items).
CREATE FUNCTION integrations.begin_batch(_specs jsonb, _claimed_by text, _lease_seconds integer DEFAULT 60)
RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _spec jsonb;
  _one jsonb;
  _out jsonb := '[]';
  _code text;
  _message text;
  _item bigint;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  FOR _spec IN SELECT s FROM pg_catalog.jsonb_array_elements(_specs) AS s LOOP
    BEGIN
      IF _spec ? 'orderId' THEN
        _one := integrations.begin_order_emission((_spec ->> 'orderId')::bigint, _claimed_by, _lease_seconds);
      ELSIF _spec ? 'emissionId' THEN
        _one := integrations.begin_emission_retry((_spec ->> 'emissionId')::bigint, _claimed_by, _lease_seconds);
      ELSE
        _item := (_spec ->> 'riskItemId')::bigint;
        IF _spec ->> 'riskItemUid' IS NOT NULL THEN
          SELECT r.id INTO _item FROM insurance.risk_items r
           WHERE r.uid = (_spec ->> 'riskItemUid')::uuid AND (_item IS NULL OR r.id = _item);
          IF _item IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'RISK_ITEM_NOT_FOUND';
          END IF;
        END IF;
        _one := integrations.begin_emission(_item, _spec ->> 'provider', _spec ->> 'event', _claimed_by, _lease_seconds);
      END IF;
    EXCEPTION WHEN SQLSTATE 'PT404' THEN
      GET STACKED DIAGNOSTICS _code = PG_EXCEPTION_DETAIL, _message = MESSAGE_TEXT;
      _one := pg_catalog.jsonb_build_object('refused', pg_catalog.jsonb_build_object(
                'status', 404, 'code', _code, 'message', _message));
    END;
    _out := _out || pg_catalog.jsonb_build_array(_one);
  END LOOP;
  RETURN _out;
END
$$;
COMMENT ON FUNCTION integrations.begin_batch(jsonb, text, integer) IS
  'The begin_* answer of each spec ({riskItemId and/or riskItemUid, provider, event} | {orderId} | {emissionId}) in one '
  'transaction, in order; a spec that names nothing answers {refused: {status: 404, code, message}}. '
  'Service role.';
GRANT EXECUTE ON FUNCTION integrations.begin_batch(jsonb, text, integer) TO insurance_service, insurance_app;

-- begin_post_sales_emission: a holder's post-sales emission of an item they may reach
-- (an authorized_claimants row for the token's e-mail, else PT401 ACCESS_DENIED); runs as
-- the owner to claim the key, which the holder role cannot touch.
CREATE FUNCTION integrations.begin_post_sales_emission(_risk_item_id bigint, _claimed_by text,
                                                       _lease_seconds integer DEFAULT 60) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_holder');
  IF NOT EXISTS (SELECT FROM insurance.authorized_claimants c
                  WHERE c.risk_item_id = _risk_item_id
                    AND c.email = lower(insurance.claim('email'))) THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'access denied', DETAIL = 'ACCESS_DENIED';
  END IF;
  RETURN integrations.begin_emission(_risk_item_id, NULL, 'POST_SALES', _claimed_by, _lease_seconds);
END
$$;
COMMENT ON FUNCTION integrations.begin_post_sales_emission(bigint, text, integer) IS
  'Claims the POST_SALES key of an item the calling holder may reach (an authorized_claimants row for '
  'the token''s e-mail); raises PT401 ACCESS_DENIED otherwise. Holder role (through '
  'postsales.begin_emission).';
REVOKE ALL ON FUNCTION integrations.begin_post_sales_emission(bigint, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations.begin_post_sales_emission(bigint, text, integer)
   TO insurance_holder, insurance_app;
COMMIT;