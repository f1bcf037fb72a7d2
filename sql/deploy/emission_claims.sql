-- Deploy insurance:emission_claims to pg
-- At most one provider call per emission key, none after SUCCESS.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
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
COMMIT;
