-- Deploy insurance:beneficiaries to pg
-- requires: risk_items
-- Beneficiaries of a risk item; those with is_holder = true may log in to post-sales
-- (their e-mails are mirrored into authorized_claimants by the post-sales change).
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.beneficiaries (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  risk_item_id bigint NOT NULL REFERENCES insurance.risk_items ON DELETE CASCADE,
  name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  email        text CHECK (email = lower(email) AND email ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$'),
  document     text CHECK (length(document) <= 64),
  relationship text CHECK (length(relationship) <= 64),
  is_holder    boolean NOT NULL DEFAULT false,
  share        numeric(5, 2) NOT NULL DEFAULT 0 CHECK (share BETWEEN 0 AND 100),
  created_at   timestamptz NOT NULL DEFAULT now(),
  CHECK (NOT is_holder OR email IS NOT NULL)  -- a holder logs in by e-mail
);
CREATE INDEX beneficiaries_risk_item_id_idx ON insurance.beneficiaries (risk_item_id);
COMMENT ON TABLE insurance.beneficiaries IS 'Beneficiaries of a risk item; is_holder marks who may use post-sales';

GRANT SELECT, INSERT, UPDATE, DELETE ON insurance.beneficiaries TO insurance_holder, insurance_service;
GRANT SELECT, INSERT ON insurance.beneficiaries TO insurance_channel;
GRANT SELECT ON insurance.beneficiaries TO insurance_dashboard;
ALTER TABLE insurance.beneficiaries ENABLE ROW LEVEL SECURITY;

COMMIT;
