-- Deploy insurance:risk_items_ended_at to pg
-- When a policy ended: the contract's retention (POLICY_RETENTION) runs from it. Set by the
-- trigger risk_items_mark_ended when the status leaves 'active' (cleared if it comes back); items
-- that ended before this column existed count from their updated_at (insurance.retained_until).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- ACCESS EXCLUSIVE on risk_items: a nullable column without a default, a catalog change with no rewrite, held for a moment
ALTER TABLE insurance.risk_items ADD COLUMN ended_at timestamptz;
COMMENT ON COLUMN insurance.risk_items.ended_at IS
  'When the policy ended (its status left active); NULL while active. POLICY_RETENTION runs from it';

COMMIT;
