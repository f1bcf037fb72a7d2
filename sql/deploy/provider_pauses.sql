-- Deploy insurance:provider_pauses to pg
-- An insurer paused by an operator (its maintenance window, an outage): while a row says so, its
-- emissions wait without spending attempts (integrations.begin_batch does not claim them, the
-- retry sweep does not queue them); resumed by hand, or at `until` by itself.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.provider_pauses (
  provider  text PRIMARY KEY CHECK (provider ~ '^[A-Z][A-Z0-9_]{0,63}$'),
  paused_at timestamptz NOT NULL DEFAULT now(),
  until     timestamptz,
  CHECK (until IS NULL OR until > paused_at)
);
COMMENT ON TABLE insurance.provider_pauses IS
  'Paused insurers: a provider is paused while its row exists and until is NULL or later than now(); '
  'written by integrations.pause_provider and resume_provider only (audited by their callers)';
COMMENT ON COLUMN insurance.provider_pauses.until IS 'When the pause ends by itself (NULL: until resumed by hand)';
COMMENT ON CONSTRAINT provider_pauses_provider_check ON insurance.provider_pauses IS 'must be a provider code such as PROVIDER_A';
COMMENT ON CONSTRAINT provider_pauses_check ON insurance.provider_pauses IS 'must end after it starts';
ALTER TABLE insurance.provider_pauses ENABLE ROW LEVEL SECURITY;
-- A handful of rows, read by the claim, the sweep and the back-office's states.
CREATE POLICY provider_pauses_select_service ON insurance.provider_pauses FOR SELECT TO insurance_service USING (true);
CREATE POLICY provider_pauses_select_dashboard ON insurance.provider_pauses FOR SELECT TO insurance_dashboard USING (true);
GRANT SELECT ON insurance.provider_pauses TO insurance_service, insurance_dashboard;

COMMIT;
