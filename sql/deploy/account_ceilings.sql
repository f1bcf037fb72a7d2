-- Deploy insurance:account_ceilings to pg
-- Account-wide ceilings on failures (docs/security.md "Lockouts that cannot be aimed"). The
-- limits that an address can reach key on (account, address), so that one address locks
-- itself out, not the account's owner elsewhere; above them, a high ceiling per account still
-- stops guessing spread over many addresses. When one trips, it is recorded once per window:
-- one audit row, and one more in the counter that /metrics exposes
-- (insurance_account_ceiling_trips_total, by kind).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.account_ceiling_trips (
  kind        text NOT NULL CHECK (kind IN ('dashboard_login', 'otp_request', 'otp_verify')),
  account     text NOT NULL,
  window_ends timestamptz NOT NULL,
  tripped_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (kind, account, window_ends)
);
CREATE INDEX account_ceiling_trips_window_ends_idx ON insurance.account_ceiling_trips (window_ends);
COMMENT ON TABLE insurance.account_ceiling_trips IS
  'Account-wide failure ceilings that tripped, one row per (kind, account, window): reported once each';
ALTER TABLE insurance.account_ceiling_trips ENABLE ROW LEVEL SECURITY;  -- no policy: the function below only

CREATE TABLE insurance.account_ceiling_counts (
  kind  text PRIMARY KEY CHECK (kind IN ('dashboard_login', 'otp_request', 'otp_verify')),
  trips bigint NOT NULL CHECK (trips >= 0)
);
COMMENT ON TABLE insurance.account_ceiling_counts IS
  'How many times each kind of account-wide ceiling has tripped (a Prometheus counter, read by read_metrics)';
ALTER TABLE insurance.account_ceiling_counts ENABLE ROW LEVEL SECURITY;

-- _report_account_ceiling(kind, account, limit, window_ends): the ceiling of this kind was
-- reached for this account in the window ending then. The first report of a window writes the
-- audit row (actor system:limits, action limits.account_ceiling, targets [account], result
-- RATE_LIMITED) and counts the
-- trip; later ones change nothing. Called as the owner by the login entry points.
CREATE FUNCTION insurance._report_account_ceiling(_kind text, _account text, _limit integer,
                                                  _window_ends timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
BEGIN
  INSERT INTO insurance.account_ceiling_trips (kind, account, window_ends)
  VALUES (_kind, _account, _window_ends)
  ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  INSERT INTO insurance.account_ceiling_counts AS c (kind, trips) VALUES (_kind, 1)
  ON CONFLICT (kind) DO UPDATE SET trips = c.trips + 1;
  PERFORM insurance.record_audit('system:limits', 'limits.account_ceiling', pg_catalog.jsonb_build_array(_account),
                                 'RATE_LIMITED', pg_catalog.jsonb_build_object('kind', _kind, 'limit', _limit,
                                                                          'until', _window_ends));
END
$$;
COMMENT ON FUNCTION insurance._report_account_ceiling(text, text, integer, timestamptz) IS
  'Records that the _kind ceiling (_limit failures) of _account tripped in the window ending at '
  '_window_ends: the first report of a window writes an audit row (limits.account_ceiling) and counts '
  'the trip; later ones do nothing. Returns nothing. Owner-run login functions only.';
REVOKE ALL ON FUNCTION insurance._report_account_ceiling(text, text, integer, timestamptz) FROM PUBLIC;

COMMIT;
