-- Deploy insurance:integration_emissions to pg
-- requires: risk_items
-- One row per (risk_item_id, provider, event): the outcome of pushing a risk item to a provider.
-- States (see the emission state machine change for the transitions):
--   SUCCESS    the provider accepted it; external_id and response stored; final
--   FAILED     retryable error; next_retry_at set
--   ABANDONED  non-retryable error or attempts exhausted; only a dashboard retry restarts it
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.integration_emissions (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  risk_item_id  bigint NOT NULL REFERENCES insurance.risk_items ON DELETE CASCADE,
  provider      text NOT NULL CHECK (provider ~ '^[A-Z][A-Z0-9_]{0,63}$'),
  event         text NOT NULL CHECK (event ~ '^[A-Z][A-Z0-9_]{0,63}$'),
  status        text NOT NULL CHECK (status IN ('SUCCESS', 'FAILED', 'ABANDONED')),
  external_id   text,
  response      jsonb,
  error_history jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(error_history) = 'array'),
  next_retry_at timestamptz,
  attempts      integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (risk_item_id, provider, event),
  CHECK (status <> 'FAILED' OR next_retry_at IS NOT NULL),
  CHECK (status <> 'SUCCESS' OR next_retry_at IS NULL)
);
-- The retry sweep reads due FAILED rows only.
CREATE INDEX integration_emissions_due_idx ON insurance.integration_emissions (next_retry_at)
  WHERE status = 'FAILED';
CREATE TRIGGER integration_emissions_touch_updated_at BEFORE UPDATE ON insurance.integration_emissions
  FOR EACH ROW EXECUTE FUNCTION insurance.touch_updated_at();
COMMENT ON TABLE insurance.integration_emissions IS 'Emission of a risk item to a provider, per (risk_item_id, provider, event)';

GRANT SELECT, INSERT, UPDATE ON insurance.integration_emissions TO insurance_service;
GRANT SELECT ON insurance.integration_emissions TO insurance_dashboard;
ALTER TABLE insurance.integration_emissions ENABLE ROW LEVEL SECURITY;

COMMIT;
