-- Deploy insurance:channels to pg
-- A partner channel calls the gateway. Its API key is stored only as a SHA-256 hash;
-- the key itself is shown once, when the channel is created or its key rotated. Every new key
-- bumps the channel's key generation; gateway tokens carry the generation they were issued
-- under (claim `gen`), and gateway.admit() refuses a token of an older one: a rotated key
-- takes its tokens with it.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
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
  -- squawk-ignore prefer-bigint-over-int -- the API key generation: one per new key, never near 2^31
  key_generation      integer NOT NULL DEFAULT 1 CHECK (key_generation > 0),
  active              boolean NOT NULL DEFAULT true,
  revoked_at          timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  CHECK (revoked_at IS NULL OR NOT active)
);
COMMENT ON TABLE insurance.channels IS 'Partner channels of the gateway; api_key_hash = sha256(api key)';
-- One name, one partner: operators tell channels apart by name (back-office, audit, channels list).
CREATE UNIQUE INDEX channels_name_key ON insurance.channels (lower(name));
COMMENT ON COLUMN insurance.channels.branches IS 'Gateway branches whose tokens this channel may obtain and use';
COMMENT ON COLUMN insurance.channels.key_generation IS 'Bumped by every new API key; tokens carry it (claim gen)';

CREATE FUNCTION insurance._bump_key_generation() RETURNS trigger
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  IF NEW.api_key_hash IS DISTINCT FROM OLD.api_key_hash THEN
    NEW.key_generation := OLD.key_generation + 1;
  ELSE
    NEW.key_generation := OLD.key_generation;  -- nobody sets it by hand
  END IF;
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION insurance._bump_key_generation() IS
  'BEFORE UPDATE trigger of channels: a changed api_key_hash is a new key generation; the generation is never set by hand. Trigger only.';
REVOKE ALL ON FUNCTION insurance._bump_key_generation() FROM PUBLIC;
CREATE TRIGGER channels_key_generation BEFORE UPDATE ON insurance.channels
  FOR EACH ROW EXECUTE FUNCTION insurance._bump_key_generation();

GRANT SELECT ON insurance.channels TO insurance_service, insurance_dashboard;
ALTER TABLE insurance.channels ENABLE ROW LEVEL SECURITY;

COMMIT;
