-- Deploy insurance:rate_limits to pg
-- Admission of a gateway call: channel active, key generation and branch current, per-minute counter shared by every app process.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- Admission of a gateway call, done inside the route's own SQL call (no extra round trip):
-- the token's channel must still be active (a revoked channel's tokens stop at once), and,
-- when the app passes a limit > 0, the channel's calls of the current minute are counted
-- here, in PostgreSQL, so that the limit holds across every app process.

-- One row per channel: the current fixed one-minute window and its hits.
CREATE TABLE insurance.rate_limits (
  channel_id   uuid PRIMARY KEY REFERENCES insurance.channels ON DELETE CASCADE,
  window_start timestamptz NOT NULL,
  -- squawk-ignore prefer-bigint-over-int -- calls of one channel in one minute, capped by its limit
  hits         integer NOT NULL CHECK (hits > 0)
);
COMMENT ON TABLE insurance.rate_limits IS 'Gateway calls per channel in the current minute (RATE_LIMIT_PER_MINUTE)';
ALTER TABLE insurance.rate_limits ENABLE ROW LEVEL SECURITY;
COMMIT;
