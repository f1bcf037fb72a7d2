-- Deploy insurance:admin_orders to pg
-- Command line: orders on risk items (audited)
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- ---------------------------------------------------------------- orders

-- create_order: an order on a risk item named by uid or id; its insert trigger enqueues the
-- event's dispatch (POLICY_CREATED: the welcome mail). RISK_ITEM_NOT_FOUND otherwise.
CREATE FUNCTION admin.create_order(_actor text, _risk_item_id bigint, _risk_item_uid uuid, _event text,
                                   _data jsonb)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _item insurance.risk_items;
  _order insurance.orders;
BEGIN
  SELECT * INTO _item FROM insurance.risk_items r
   WHERE (_risk_item_id IS NULL OR r.id = _risk_item_id)
     AND (_risk_item_uid IS NULL OR r.uid = _risk_item_uid)
     AND (_risk_item_id IS NOT NULL OR _risk_item_uid IS NOT NULL);
  IF NOT FOUND THEN
    RETURN admin._refused(_actor, 'orders.create',
                          pg_catalog.jsonb_build_array(coalesce(_risk_item_uid::text, _risk_item_id::text)),
                          'RISK_ITEM_NOT_FOUND', 'no such risk item');
  END IF;
  INSERT INTO insurance.orders (risk_item_id, event, data) VALUES (_item.id, _event, coalesce(_data, '{}'))
  RETURNING * INTO _order;
  PERFORM insurance.record_audit(_actor, 'orders.create', pg_catalog.jsonb_build_array(_item.uid), 'ok',
            pg_catalog.jsonb_build_object('orderId', _order.id, 'event', _event));
  RETURN pg_catalog.jsonb_build_object('orderId', _order.id, 'riskItemId', _item.id, 'riskItemUid', _item.uid,
                                       'event', _order.event, 'createdAt', _order.created_at);
END
$$;
COMMENT ON FUNCTION admin.create_order(text, bigint, uuid, text, jsonb) IS
  'Creates an order of event _event on the risk item named by uid or id (its insert trigger enqueues '
  'the event''s dispatch); audited; refuses RISK_ITEM_NOT_FOUND. Operators.';

COMMIT;
