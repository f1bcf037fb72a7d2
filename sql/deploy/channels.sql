-- Deploy insurance:channels to pg
-- requires: schemas
-- A partner channel calls the gateway. Its API key is stored only as a SHA-256 hash;
-- the key itself is shown once, when the channel is created or its key rotated.
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.channels (
  id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name                text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  branches            text[] NOT NULL DEFAULT '{v1}'
                      CHECK (branches <@ ARRAY['v1', 'v2', 'ia/v1', 'ia/v2', 'integrations/v1', 'integrations/v2']
                             AND cardinality(branches) > 0),
  api_key_hash        bytea NOT NULL UNIQUE CHECK (length(api_key_hash) = 32),
  -- IAPayload: keys of the AI services this channel may use (ia branches).
  ia_keys             jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(ia_keys) = 'object'),
  -- IntegrationPayload: webhooks and insurer_id (integrations branches).
  integration_payload jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(integration_payload) = 'object'),
  active              boolean NOT NULL DEFAULT true,
  revoked_at          timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  CHECK (revoked_at IS NULL OR NOT active)
);
COMMENT ON TABLE insurance.channels IS 'Partner channels of the gateway; api_key_hash = sha256(api key)';

GRANT SELECT ON insurance.channels TO insurance_service, insurance_dashboard;
ALTER TABLE insurance.channels ENABLE ROW LEVEL SECURITY;

COMMIT;
