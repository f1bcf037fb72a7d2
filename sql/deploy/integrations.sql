-- Deploy insurance:integrations to pg
-- One row per insurer provider: its upper-case slug and credentials.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.integrations (
  slug        text PRIMARY KEY CHECK (slug ~ '^[A-Z][A-Z0-9_]{0,63}$'),
  -- Provider credentials and settings; PROVIDER_B keeps channels[] here.
  auth_config jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(auth_config) = 'object'),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TRIGGER integrations_touch_updated_at BEFORE UPDATE ON insurance.integrations
  FOR EACH ROW EXECUTE FUNCTION insurance.touch_updated_at();
COMMENT ON TABLE insurance.integrations IS 'Insurer providers (slug upper case) and their auth_config';

GRANT SELECT ON insurance.integrations TO insurance_service;

COMMIT;
