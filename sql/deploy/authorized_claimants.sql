-- Deploy insurance:authorized_claimants to pg
-- requires: risk_items
-- requires: email_address
-- A row grants the holder e-mail access to one risk item in post-sales.
BEGIN;
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

COMMIT;
