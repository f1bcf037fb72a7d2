-- Deploy insurance:risk_items to pg
-- requires: packages
-- requires: channels
-- A risk item is an insured policy line. Holders reach it through authorized_claimants,
-- channels through channel_id: both by RLS policies that come with their surfaces.
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.risk_items (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uid             uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  package_id      bigint NOT NULL REFERENCES insurance.packages,
  channel_id      uuid REFERENCES insurance.channels,
  policy_uid      text NOT NULL CHECK (length(policy_uid) BETWEEN 1 AND 100),
  status          text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'cancelled', 'expired')),
  variant         text NOT NULL,
  insured_subject jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(insured_subject) = 'object'),
  -- metadata.integration holds state, externalId, emissionId, error after a dispatch.
  metadata        jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (package_id, policy_uid),
  -- The variant must be one the package sells.
  FOREIGN KEY (package_id, variant) REFERENCES insurance.package_variants (package_id, code)
);
CREATE INDEX risk_items_channel_id_idx ON insurance.risk_items (channel_id, id);
COMMENT ON TABLE insurance.risk_items IS 'Insured risk items (policies); metadata.integration records the last dispatch';

CREATE FUNCTION insurance.touch_updated_at() RETURNS trigger
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  NEW.updated_at := now();
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION insurance.touch_updated_at() IS 'BEFORE UPDATE trigger: keeps updated_at current';

CREATE TRIGGER risk_items_touch_updated_at BEFORE UPDATE ON insurance.risk_items
  FOR EACH ROW EXECUTE FUNCTION insurance.touch_updated_at();

GRANT SELECT, UPDATE (insured_subject) ON insurance.risk_items TO insurance_holder;
GRANT SELECT, INSERT (package_id, channel_id, policy_uid, variant, insured_subject, metadata, status)
   ON insurance.risk_items TO insurance_channel;
GRANT SELECT, INSERT, UPDATE ON insurance.risk_items TO insurance_service;
GRANT SELECT ON insurance.risk_items TO insurance_dashboard;
ALTER TABLE insurance.risk_items ENABLE ROW LEVEL SECURITY;

COMMIT;
