-- Deploy insurance:webhook_secrets to pg
-- Partner webhook secrets: per channel, the salt that signs its deliveries and the previous one during a rotation
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE webhooks.secrets (
  channel_id    uuid PRIMARY KEY REFERENCES insurance.channels (id) ON DELETE CASCADE,
  salt          bytea NOT NULL CHECK (octet_length(salt) = 32),
  previous_salt bytea CHECK (octet_length(previous_salt) = 32),
  rotated_at    timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE webhooks.secrets IS
  'A channel''s webhook signing secret as a salt: secret = HMAC-SHA256(WEBHOOK_SECRET_KEY, salt) (app/webhooks.py); no role reads it but through webhooks.signing_salts';
COMMENT ON COLUMN webhooks.secrets.salt IS 'The current secret''s salt (32 random bytes)';
COMMENT ON COLUMN webhooks.secrets.previous_salt IS 'The salt before the last rotation: it still signs for WEBHOOK_SECRET_OVERLAP after rotated_at';
COMMENT ON COLUMN webhooks.secrets.rotated_at IS 'When the secret was last rotated (NULL: never)';
COMMENT ON COLUMN webhooks.secrets.created_at IS 'When the channel first had a webhook secret';

COMMIT;
