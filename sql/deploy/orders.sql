-- Deploy insurance:orders to pg
-- Orders on a risk item. An insert whose event must fire an integration (POLICY_CREATED:
-- the welcome e-mail) is dispatched by the trigger of the emission pipeline change.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.orders (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  risk_item_id bigint NOT NULL REFERENCES insurance.risk_items ON DELETE CASCADE,
  event        text NOT NULL DEFAULT 'POLICY_CREATED' CHECK (event ~ '^[A-Z][A-Z0-9_]{0,63}$'),
  data         jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(data) = 'object'),
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orders_risk_item_id_idx ON insurance.orders (risk_item_id);
COMMENT ON TABLE insurance.orders IS 'Orders on risk items; event names the integration fact they fire';

GRANT SELECT, INSERT ON insurance.orders TO insurance_service;
GRANT SELECT ON insurance.orders TO insurance_dashboard;
ALTER TABLE insurance.orders ENABLE ROW LEVEL SECURITY;

-- dispatch-v2 reads the order.
CREATE POLICY orders_select_service ON insurance.orders FOR SELECT TO insurance_service USING (true);

COMMIT;
