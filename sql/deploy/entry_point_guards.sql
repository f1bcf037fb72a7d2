-- Deploy insurance:entry_point_guards to pg
-- requires: emission_claims
-- requires: emission_state_machine
-- requires: holder_risk_items
-- requires: postsales_emission
-- requires: entry_point_roles
-- requires: sweep_heartbeat
-- requires: dashboard_access
-- The entry points still without a require_role guard after every lane's rework: SECURITY
-- INVOKER functions that a call under a role they are not meant for would run
-- (tests/pgtap/03_entry_point_guards.sql). Each body is the one its own change left, plus
-- the guard; a call from inside a SECURITY DEFINER entry point (current_user is then the
-- owner, e.g. a holder's post-sales emission or the dashboard sync reaching begin_emission)
-- was guarded there and passes. _clean_text is a helper, no entry point: the app's login
-- loses EXECUTE (the service role keeps it for the nested calls).
BEGIN;
SET LOCAL ROLE insurance_owner;

-- integrations.begin_batch(jsonb,text,integer): guarded for insurance_service.
CREATE OR REPLACE FUNCTION integrations.begin_batch(specs jsonb, claimed_by text, lease_seconds integer DEFAULT 60)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
DECLARE
  _spec jsonb;
  _one jsonb;
  _out jsonb := '[]';
  _code text;
  _message text;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  FOR _spec IN SELECT s FROM pg_catalog.jsonb_array_elements(specs) AS s LOOP
    BEGIN
      IF _spec ? 'orderId' THEN
        _one := integrations.begin_order_emission((_spec ->> 'orderId')::bigint, claimed_by, lease_seconds);
      ELSIF _spec ? 'emissionId' THEN
        _one := integrations.begin_emission_retry((_spec ->> 'emissionId')::bigint, claimed_by, lease_seconds);
      ELSE
        _one := integrations.begin_emission((_spec ->> 'riskItemId')::bigint, _spec ->> 'provider',
                                            _spec ->> 'event', claimed_by, lease_seconds);
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
$function$;

-- integrations.begin_emission(bigint,text,text,text,integer): guarded for insurance_service.
CREATE OR REPLACE FUNCTION integrations.begin_emission(risk_item_id bigint, provider text, event text, claimed_by text, lease_seconds integer DEFAULT 60)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
DECLARE
  _uid uuid;
  _sales text;
  _post_sales text;
  _provider text := provider;
  _em insurance.integration_emissions;
  _key jsonb;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  SELECT r.uid, p.sales_integration_slug, p.post_sales_integration_slug
    INTO _uid, _sales, _post_sales
    FROM insurance.risk_items r JOIN insurance.packages p ON p.id = r.package_id
   WHERE r.id = begin_emission.risk_item_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'RISK_ITEM_NOT_FOUND';
  END IF;
  _provider := coalesce(_provider, CASE event WHEN 'SALES_DISPATCH' THEN _sales
                                              WHEN 'POST_SALES' THEN _post_sales
                                              WHEN 'POLICY_CREATED' THEN 'MAIL_PROVIDER' END);
  _key := pg_catalog.jsonb_build_object('riskItemId', risk_item_id, 'riskItemUid', _uid,
                                        'provider', _provider, 'event', event);
  IF _provider IS NULL THEN
    RETURN _key || '{"claimed": false, "status": "SKIPPED", "emissionId": null}';
  END IF;

  -- Claim first, then read the emission: a caller that recorded SUCCESS gave its claim back
  -- in the same transaction, so whoever claims after it sees the SUCCESS.
  INSERT INTO insurance.emission_claims AS c (risk_item_id, provider, event, claimed_by, lease_until)
  VALUES (risk_item_id, _provider, event, claimed_by,
          pg_catalog.clock_timestamp() + pg_catalog.make_interval(secs => lease_seconds))
  ON CONFLICT ON CONSTRAINT emission_claims_pkey DO UPDATE
     SET claimed_by = excluded.claimed_by, lease_until = excluded.lease_until
   WHERE c.lease_until < pg_catalog.clock_timestamp();
  IF NOT FOUND THEN
    SELECT * INTO _em FROM insurance.integration_emissions e
     WHERE e.risk_item_id = begin_emission.risk_item_id AND e.provider = _provider AND e.event = begin_emission.event;
    RETURN _key || '{"claimed": false, "status": "IN_PROGRESS"}'
                || pg_catalog.jsonb_build_object('emissionId', _em.id);
  END IF;

  SELECT * INTO _em FROM insurance.integration_emissions e
   WHERE e.risk_item_id = begin_emission.risk_item_id AND e.provider = _provider AND e.event = begin_emission.event;
  IF _em.status = 'SUCCESS' OR _em.status = 'ABANDONED'
     OR (_em.status = 'FAILED' AND _em.next_retry_at > pg_catalog.now()) THEN
    DELETE FROM insurance.emission_claims c
     WHERE c.risk_item_id = begin_emission.risk_item_id AND c.provider = _provider AND c.event = begin_emission.event;
    RETURN _key || integrations.emission_json(_em) || '{"claimed": false}';
  END IF;
  -- The caller needs the StandardRiskItem next: it comes in the same round trip.
  RETURN _key || pg_catalog.jsonb_build_object(
    'claimed', true, 'emissionId', _em.id, 'status', _em.status, 'attempts', coalesce(_em.attempts, 0),
    'idempotencyKey', _uid || ':' || _provider || ':' || event,
    'item', integrations.standard_risk_item(risk_item_id));
END
$function$;

-- integrations.begin_emission_retry(bigint,text,integer): guarded for insurance_service.
CREATE OR REPLACE FUNCTION integrations.begin_emission_retry(emission_id bigint, claimed_by text, lease_seconds integer DEFAULT 60)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
DECLARE
  _em insurance.integration_emissions;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  SELECT * INTO _em FROM insurance.integration_emissions e WHERE e.id = emission_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'emission not found', DETAIL = 'EMISSION_NOT_FOUND';
  END IF;
  RETURN integrations.begin_emission(_em.risk_item_id, _em.provider, _em.event, claimed_by, lease_seconds);
END
$function$;

-- integrations.begin_order_emission(bigint,text,integer): guarded for insurance_service.
CREATE OR REPLACE FUNCTION integrations.begin_order_emission(order_id bigint, claimed_by text, lease_seconds integer DEFAULT 60)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
DECLARE
  _order insurance.orders;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  SELECT * INTO _order FROM insurance.orders o WHERE o.id = order_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'order not found', DETAIL = 'ORDER_NOT_FOUND';
  END IF;
  RETURN integrations.begin_emission(_order.risk_item_id, NULL, _order.event, claimed_by, lease_seconds)
         || pg_catalog.jsonb_build_object('orderId', _order.id);
END
$function$;

-- integrations.record_batch(jsonb,jsonb): guarded for insurance_service.
CREATE OR REPLACE FUNCTION integrations.record_batch(outcomes jsonb, options jsonb DEFAULT '{}'::jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
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
                                          o -> 'outcome', options) ORDER BY n), '[]')
      INTO _out
      FROM pg_catalog.jsonb_array_elements(outcomes) WITH ORDINALITY AS x(o, n);
    RETURN _out;
  EXCEPTION WHEN OTHERS THEN
    _out := '[]';
  END;
  FOR _o IN SELECT o FROM pg_catalog.jsonb_array_elements(outcomes) WITH ORDINALITY AS x(o, n) ORDER BY n LOOP
    BEGIN
      _one := integrations.record_emission((_o ->> 'riskItemId')::bigint, _o ->> 'provider', _o ->> 'event',
                                           _o -> 'outcome', options);
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS _state = RETURNED_SQLSTATE;
      _unrecordable := pg_catalog.jsonb_build_object(
        'status', 'FAILED', 'code', 'OUTCOME_UNRECORDABLE', 'retryable', true,
        'message', 'the outcome could not be stored (SQLSTATE ' || _state || ')');
      BEGIN
        _one := integrations.record_emission((_o ->> 'riskItemId')::bigint, _o ->> 'provider', _o ->> 'event',
                                             _unrecordable, options);
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
$function$;

-- postsales.my_risk_items(): guarded for insurance_holder.
CREATE OR REPLACE FUNCTION postsales.my_risk_items()
 RETURNS json
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_holder');
  END IF;
  RETURN (
    SELECT coalesce(json_agg(json_build_object(
             'id', ri.id, 'uid', ri.uid, 'policy_uid', ri.policy_uid, 'status', ri.status,
             'variant', ri.variant, 'insured_subject', ri.insured_subject,
             'package', json_build_object('uid', p.uid, 'name', p.name),
             'created_at', ri.created_at, 'updated_at', ri.updated_at) ORDER BY ri.id DESC), '[]')
      FROM insurance.authorized_claimants ac
      JOIN insurance.risk_items ri ON ri.id = ac.risk_item_id
      JOIN insurance.packages p ON p.id = ri.package_id
     WHERE ac.email = (SELECT insurance.claim('email')) AND ri.status = 'active');
END
$function$;

-- postsales.begin_emission(bigint,uuid,text,integer): guarded for insurance_holder.
CREATE OR REPLACE FUNCTION postsales.begin_emission(_risk_item_id bigint, _risk_item_uid uuid, _claimed_by text, _lease_seconds integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
DECLARE
  _id bigint;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_holder');
  END IF;
  IF _risk_item_id IS NULL AND _risk_item_uid IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'give the item''s uid (or its id)',
                          DETAIL = 'VALIDATION_ERROR', HINT = '{"field": "uid"}';
  END IF;
  SELECT r.id INTO _id FROM insurance.risk_items r
   WHERE (_risk_item_uid IS NULL OR r.uid = _risk_item_uid)
     AND (_risk_item_id IS NULL OR r.id = _risk_item_id);
  RETURN integrations.begin_post_sales_emission(_id, _claimed_by, _lease_seconds);
END
$function$;

-- dashboard.emission_detail(bigint): guarded for insurance_dashboard.
CREATE OR REPLACE FUNCTION dashboard.emission_detail(_emission_id bigint)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
DECLARE
  _e insurance.integration_emissions;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
  SELECT * INTO _e FROM insurance.integration_emissions e WHERE e.id = _emission_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'emission not found', DETAIL = 'NOT_FOUND';
  END IF;
  RETURN jsonb_build_object(
    'emission', dashboard._emission_json(_e) || jsonb_build_object('errorHistory', _e.error_history),
    'riskItem', (SELECT jsonb_build_object('id', r.id, 'uid', r.uid, 'policyUid', r.policy_uid,
                                           'packageId', r.package_id, 'status', r.status, 'variant', r.variant,
                                           'integration', r.metadata -> 'integration')
                   FROM insurance.risk_items r WHERE r.id = _e.risk_item_id),
    'retryPending', EXISTS (SELECT FROM outbox.http_requests o
                             WHERE o.delivered_at IS NULL AND o.body ? 'emissionId'
                               AND (o.body ->> 'emissionId')::bigint = _e.id));
END
$function$;

-- dashboard.emissions_by_risk_item(bigint): guarded for insurance_dashboard.
CREATE OR REPLACE FUNCTION dashboard.emissions_by_risk_item(_risk_item_id bigint)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
DECLARE
  _item jsonb;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
  SELECT jsonb_build_object('id', r.id, 'uid', r.uid, 'policyUid', r.policy_uid, 'packageId', r.package_id,
                            'status', r.status, 'variant', r.variant, 'integration', r.metadata -> 'integration')
    INTO _item
    FROM insurance.risk_items r WHERE r.id = _risk_item_id;
  IF _item IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'NOT_FOUND';
  END IF;
  RETURN jsonb_build_object('riskItem', _item, 'emissions', coalesce(
    (SELECT jsonb_agg(dashboard._emission_json(e) ORDER BY e.id)
       FROM insurance.integration_emissions e WHERE e.risk_item_id = _risk_item_id), '[]'));
END
$function$;

-- dashboard.list_audit(bigint,integer): guarded for insurance_dashboard.
CREATE OR REPLACE FUNCTION dashboard.list_audit(_before_id bigint, _limit integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
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
    FROM (SELECT a.id, a.at, a.actor, a.action, a.targets, a.result, a.details FROM insurance.audit_log a
           WHERE _before_id IS NULL OR a.id < _before_id ORDER BY a.id DESC LIMIT _limit + 1) a;
  RETURN jsonb_build_object(
    'items', coalesce((SELECT jsonb_agg(x) FROM jsonb_array_elements(_rows) WITH ORDINALITY a(x, n) WHERE n <= _limit), '[]'),
    'nextCursor', CASE WHEN jsonb_array_length(coalesce(_rows, '[]')) > _limit
                       THEN (_rows -> (_limit - 1) ->> 'id') END);
END
$function$;

-- dashboard.list_emissions(text[],text,text,timestamp with time zone,timestamp with time zone,bigint,integer): guarded for insurance_dashboard.
CREATE OR REPLACE FUNCTION dashboard.list_emissions(_statuses text[], _provider text, _event text, _since timestamp with time zone, _until timestamp with time zone, _after_id bigint, _limit integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
DECLARE
  _rows insurance.integration_emissions[];
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
  IF _limit IS NULL OR _limit NOT BETWEEN 1 AND 100 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'limit must be between 1 and 100', DETAIL = 'BAD_REQUEST';
  END IF;
  SELECT array_agg(e ORDER BY e.id DESC) INTO _rows
    FROM (SELECT * FROM insurance.integration_emissions e
           WHERE (_statuses IS NULL OR e.status = ANY (_statuses))
             AND (_provider IS NULL OR e.provider = _provider)
             AND (_event IS NULL OR e.event = _event)
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
$function$;

-- dashboard.list_outbox(boolean,bigint,integer): guarded for insurance_dashboard.
CREATE OR REPLACE FUNCTION dashboard.list_outbox(_dead boolean, _after_id bigint, _limit integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
DECLARE
  _rows jsonb;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
  IF _limit IS NULL OR _limit NOT BETWEEN 1 AND 100 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'limit must be between 1 and 100', DETAIL = 'BAD_REQUEST';
  END IF;
  SELECT jsonb_agg(jsonb_build_object(
           'id', o.id, 'url', dashboard._outbox_url(o.url), 'emissionId', o.body -> 'emissionId',
           'attempts', o.attempts, 'deliverAfter', o.deliver_after, 'deadAt', o.dead_at,
           'leased', o.lease_until > pg_catalog.now(), 'lastStatus', o.last_status,
           'lastError', left(o.last_error, 300), 'createdAt', o.created_at) ORDER BY o.id)
    INTO _rows
    FROM (SELECT * FROM outbox.http_requests o
           WHERE o.delivered_at IS NULL AND (o.dead_at IS NOT NULL) = coalesce(_dead, false)
             AND (_after_id IS NULL OR o.id > _after_id)
           ORDER BY o.id LIMIT _limit + 1) o;
  RETURN jsonb_build_object(
    'items', coalesce((SELECT jsonb_agg(x) FROM jsonb_array_elements(_rows) WITH ORDINALITY a(x, n) WHERE n <= _limit), '[]'),
    'nextCursor', CASE WHEN jsonb_array_length(coalesce(_rows, '[]')) > _limit
                       THEN (_rows -> (_limit - 1) ->> 'id') END);
END
$function$;

-- dashboard.post_sales_target(bigint): guarded for insurance_dashboard.
CREATE OR REPLACE FUNCTION dashboard.post_sales_target(_risk_item_id bigint)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
DECLARE
  _target jsonb;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
  SELECT jsonb_build_object('riskItemId', r.id, 'provider', p.post_sales_integration_slug) INTO _target
    FROM insurance.risk_items r JOIN insurance.packages p ON p.id = r.package_id
   WHERE r.id = _risk_item_id;
  IF _target IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'NOT_FOUND';
  END IF;
  RETURN _target;
END
$function$;

-- dashboard.risk_item_emissions(bigint,uuid): guarded for insurance_dashboard.
CREATE OR REPLACE FUNCTION dashboard.risk_item_emissions(_id bigint, _uid uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
DECLARE
  _item bigint := _id;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
  IF _uid IS NOT NULL THEN
    SELECT r.id INTO _item FROM insurance.risk_items r WHERE r.uid = _uid AND (_id IS NULL OR r.id = _id);
  END IF;
  RETURN dashboard.emissions_by_risk_item(coalesce(_item, 0));
END
$function$;

REVOKE EXECUTE ON FUNCTION integrations._clean_text(text, integer) FROM insurance_app;

COMMIT;
