-- Deploy insurance:redelivery_counts to pg
-- Partners' webhook redeliveries per channel in the current minute (issue 29)
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- One row per channel: the current calendar minute and the redeliveries asked for in it, so
-- that WEBHOOK_REDELIVERIES_PER_MINUTE holds across every app process (gateway.redeliver_webhook).
CREATE TABLE webhooks.redelivery_counts (
  channel_id   uuid PRIMARY KEY REFERENCES insurance.channels (id) ON DELETE CASCADE,
  window_start timestamptz NOT NULL,
  hits         bigint NOT NULL CHECK (hits > 0)
);
COMMENT ON TABLE webhooks.redelivery_counts IS
  'A channel''s webhook redeliveries in the current minute (WEBHOOK_REDELIVERIES_PER_MINUTE); only gateway.redeliver_webhook writes it';
COMMENT ON COLUMN webhooks.redelivery_counts.window_start IS 'The minute counted (date_trunc(''minute'', now()))';
COMMENT ON COLUMN webhooks.redelivery_counts.hits IS 'Redeliveries asked for in that minute, refused ones included';
COMMENT ON CONSTRAINT redelivery_counts_hits_check ON webhooks.redelivery_counts IS 'must be 1 or more';
ALTER TABLE webhooks.redelivery_counts ENABLE ROW LEVEL SECURITY;  -- no policy: its owner's functions only

COMMIT;
