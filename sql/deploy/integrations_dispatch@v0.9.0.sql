-- Deploy insurance:integrations_dispatch to pg
-- The database starts the emissions (the seed's pg_net triggers, through the outbox):
--   risk item insert, package with a sales_integration_slug -> POST /api/integrations/dispatch
--     {"type": "INSERT", "table": "risk_items", "record": <the row>}
--   order insert with event POLICY_CREATED -> POST /api/integrations/dispatch-v2 {"order_id": id}
-- Statement-level triggers: a bulk insert enqueues its rows in one statement and one NOTIFY.
-- SECURITY DEFINER: a partner channel inserts risk items but may not write the outbox.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- enqueue_risk_item_dispatch: AFTER INSERT ... FOR EACH STATEMENT on insurance.risk_items.
CREATE FUNCTION integrations.enqueue_risk_item_dispatch() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  PERFORM outbox.http_post('/api/integrations/dispatch',
                           pg_catalog.jsonb_build_object('type', 'INSERT', 'table', 'risk_items',
                                                         'record', pg_catalog.to_jsonb(n)),
                           '{}', NULL)
     FROM new_rows n JOIN insurance.packages p ON p.id = n.package_id
    WHERE p.sales_integration_slug IS NOT NULL
    ORDER BY n.id;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION integrations.enqueue_risk_item_dispatch() IS
  'AFTER INSERT statement trigger of risk_items: one POST /api/integrations/dispatch outbox row per new'
  ' item of a package with a sales slug. Trigger only.';
REVOKE ALL ON FUNCTION integrations.enqueue_risk_item_dispatch() FROM PUBLIC;
CREATE TRIGGER risk_items_dispatch AFTER INSERT ON insurance.risk_items
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
  EXECUTE FUNCTION integrations.enqueue_risk_item_dispatch();

-- enqueue_order_dispatch: AFTER INSERT ... FOR EACH STATEMENT on insurance.orders.
CREATE FUNCTION integrations.enqueue_order_dispatch() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  PERFORM outbox.http_post('/api/integrations/dispatch-v2', pg_catalog.jsonb_build_object('order_id', n.id),
                           '{}', NULL)
     FROM new_rows n
    WHERE n.event = 'POLICY_CREATED'
    ORDER BY n.id;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION integrations.enqueue_order_dispatch() IS
  'AFTER INSERT statement trigger of orders: one POST /api/integrations/dispatch-v2 outbox row per new '
  'order whose event fires an integration (POLICY_CREATED). Trigger only.';
REVOKE ALL ON FUNCTION integrations.enqueue_order_dispatch() FROM PUBLIC;
CREATE TRIGGER orders_dispatch AFTER INSERT ON insurance.orders
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
  EXECUTE FUNCTION integrations.enqueue_order_dispatch();

COMMIT;
