-- Deploy insurance:provider_call_minutes to pg
-- Calls to each insurer (and to partners' webhooks, target WEBHOOKS) per minute: how many, how
-- many failed, and their answer times as a histogram, for the back-office's health chart.
-- Append-only: each recorded batch adds one row per target (concurrent batches never wait on a
-- shared row); the minute sweep folds a past minute's rows into one (folded) and drops minutes
-- older than a day, so a chart of the last hours reads at most one row per target and minute
-- whatever the traffic.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.provider_call_minutes (
  minute   timestamptz NOT NULL,
  target   text NOT NULL CHECK (target ~ '^[A-Z][A-Z0-9_]{0,63}$'),
  calls    bigint NOT NULL CHECK (calls >= 0),
  failures bigint NOT NULL CHECK (failures >= 0),
  -- Answer times: how many fell in each bucket of insurance.provider_call_buckets() (ms upper
  -- bounds, the last one open). integer: summed as bigint, far cheaper than numeric.
  -- squawk-ignore prefer-bigint-over-int -- a minute's calls to one target
  buckets  integer[] NOT NULL,
  folded   boolean NOT NULL DEFAULT false
);
COMMENT ON TABLE insurance.provider_call_minutes IS
  'Calls per minute and target (a provider slug, or WEBHOOKS): calls, failures, answer-time histogram; '
  'appended per recorded batch, folded per minute by the retry sweep, kept a day';
COMMENT ON COLUMN insurance.provider_call_minutes.buckets IS
  'Answers per bucket of insurance.provider_call_buckets() (ms upper bounds; the last bucket is open)';
COMMENT ON CONSTRAINT provider_call_minutes_target_check ON insurance.provider_call_minutes IS 'must be a provider code such as PROVIDER_A';
COMMENT ON CONSTRAINT provider_call_minutes_calls_check ON insurance.provider_call_minutes IS 'must be 0 or more';
COMMENT ON CONSTRAINT provider_call_minutes_failures_check ON insurance.provider_call_minutes IS 'must be 0 or more';
ALTER TABLE insurance.provider_call_minutes ENABLE ROW LEVEL SECURITY;  -- no policy: its owner's functions only
-- The chart's window and the sweep's fold read by minute.
CREATE INDEX provider_call_minutes_minute_idx ON insurance.provider_call_minutes (minute);

-- provider_call_buckets(): the histogram's bucket upper bounds in ms (the last bucket is open).
CREATE FUNCTION insurance.provider_call_buckets() RETURNS integer[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY[25, 50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 60000];
COMMENT ON FUNCTION insurance.provider_call_buckets() IS
  'The answer-time histogram''s bucket upper bounds in ms, of insurance.provider_call_minutes.buckets (a 13th '
  'bucket is open). Owner-run functions, service and dashboard roles.';
REVOKE ALL ON FUNCTION insurance.provider_call_buckets() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION insurance.provider_call_buckets() TO insurance_service, insurance_dashboard;

COMMIT;
