-- Deploy insurance:authorized_claimants to pg
-- A row grants the holder e-mail access to one risk item in post-sales.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.authorized_claimants (
  email        text NOT NULL CONSTRAINT authorized_claimants_email_check CHECK (email::insurance.email = email),
  risk_item_id bigint NOT NULL REFERENCES insurance.risk_items ON DELETE CASCADE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  -- email first: both the RLS check and the "items of this holder" lookup start from it.
  PRIMARY KEY (email, risk_item_id)
);
CREATE INDEX authorized_claimants_risk_item_id_idx ON insurance.authorized_claimants (risk_item_id);
COMMENT ON TABLE insurance.authorized_claimants IS 'Which holder e-mail may reach which risk item in post-sales';

GRANT SELECT ON insurance.authorized_claimants TO insurance_holder, insurance_dashboard;
GRANT SELECT, INSERT, DELETE ON insurance.authorized_claimants TO insurance_service;
ALTER TABLE insurance.authorized_claimants ENABLE ROW LEVEL SECURITY;
CREATE POLICY authorized_claimants_select_service ON insurance.authorized_claimants
  FOR SELECT TO insurance_service USING (true);

-- ---------------------------------------------------------------- policies
-- Every policy reads the claim as `(SELECT insurance.claim('email'))`: evaluated once per
-- query. The item check is an IN over the claimant rows of that e-mail (primary key
-- (email, risk_item_id)): one index range, hashed once per query.

CREATE POLICY authorized_claimants_select_holder ON insurance.authorized_claimants
  FOR SELECT TO insurance_holder
  USING (email = (SELECT insurance.claim('email')));

COMMIT;
