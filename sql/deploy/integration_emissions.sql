-- Deploy insurance:integration_emissions to pg
-- One row per (risk_item_id, provider, event): the outcome of pushing a risk item to a provider.
-- States (see the emission state machine change for the transitions):
--   SUCCESS    the provider accepted it; external_id and response stored; final
--   FAILED     retryable error; next_retry_at set
--   ABANDONED  non-retryable error or attempts exhausted; only a dashboard retry restarts it
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
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
  -- squawk-ignore prefer-bigint-over-int -- provider attempts of one key, bounded by max_attempts
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

CREATE POLICY integration_emissions_select_service ON insurance.integration_emissions
  FOR SELECT TO insurance_service USING (true);

-- The emission state machine (DESIGN.md), one transaction per outcome:
--   (none)|FAILED -> SUCCESS     the provider accepted it; final
--   (none)|FAILED -> FAILED      retryable error and attempts < max: attempts + 1,
--                                next_retry_at from the backoff, /retry enqueued, chat notice
--   (none)|FAILED -> ABANDONED   not retryable, or attempts reach max: chat notice, no retry
--   SUCCESS -> SUCCESS           a repeated outcome changes nothing
--   ABANDONED -> FAILED          only integrations.retry_from_backoffice (the dashboard)
-- Settings reach SQL as an argument (options jsonb), from the app's Config:
--   {"maxAttempts": 8, "retryBaseSeconds": 60, "retryCapSeconds": 21600, "chatWebhookUrl": "", "claimedBy": "..."}

CREATE POLICY integration_emissions_insert_service ON insurance.integration_emissions
  FOR INSERT TO insurance_service WITH CHECK (true);
CREATE POLICY integration_emissions_update_service ON insurance.integration_emissions
  FOR UPDATE TO insurance_service USING (true) WITH CHECK (true);

-- What a back-office user reads through the dashboard's typed RPC (/api/trpc). The app
-- calls these as insurance_dashboard with the claims of a live session ({sub: user id,
-- role: dashboard}, see dashboard.session_claims); without them the policies show nothing.

CREATE POLICY integration_emissions_select_dashboard ON insurance.integration_emissions
  FOR SELECT TO insurance_dashboard
  USING ((SELECT insurance.claim('role')) = 'dashboard' AND (SELECT insurance.claim('sub')) IS NOT NULL);

-- The list filters by status and provider and pages by id, newest first.
CREATE INDEX integration_emissions_status_id_idx ON insurance.integration_emissions (status, id DESC);

-- The back-office filters by event too.
CREATE INDEX integration_emissions_event_id_idx ON insurance.integration_emissions (event, id DESC);
-- The insurer's external id (policy number, certificate, message id) of an emission.
CREATE INDEX integration_emissions_external_id_idx ON insurance.integration_emissions (external_id)
  WHERE external_id IS NOT NULL;

COMMIT;
