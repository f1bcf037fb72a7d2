-- Deploy insurance:dashboard_users to pg
-- Back-office users (argon2 password hashes) and their server-side sessions.
-- A session is found by the SHA-256 of its cookie value; revocable and expiring.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.dashboard_users (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email         insurance.email NOT NULL UNIQUE,
  password_hash text NOT NULL CHECK (password_hash LIKE '$argon2%'),
  active        boolean NOT NULL DEFAULT true,
  created_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE insurance.dashboard_users IS 'Back-office users of the dashboard';

CREATE TABLE insurance.dashboard_sessions (
  token_hash bytea PRIMARY KEY CHECK (length(token_hash) = 32),
  user_id    bigint NOT NULL REFERENCES insurance.dashboard_users ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  ip         inet,
  user_agent text,
  CHECK (expires_at > created_at)
);
CREATE INDEX dashboard_sessions_user_id_idx ON insurance.dashboard_sessions (user_id);
COMMENT ON TABLE insurance.dashboard_sessions IS 'Dashboard sessions; token_hash = sha256(cookie value)';

ALTER TABLE insurance.dashboard_users ENABLE ROW LEVEL SECURITY;
ALTER TABLE insurance.dashboard_sessions ENABLE ROW LEVEL SECURITY;

-- Dashboard login and sessions. The app verifies the argon2 hash in Python (SQL cannot);
-- these SECURITY DEFINER functions are the only way the anonymous role reaches the users,
-- the sessions and the failed-login counters, and each does one narrow thing.
--
-- Failed logins are counted in fixed windows of 15 minutes against three keys, so that a
-- lockout cannot be aimed at someone else (docs/security.md):
--   email+ip:<e-mail>|<address>  5: an address that guesses locks itself out of that account;
--   ip:<address>                50: an address that guesses across accounts;
--   email:<e-mail>             100: the account-wide ceiling, high enough that the owner's own
--                                   mistakes never reach it, that stops guessing spread over
--                                   many addresses (each trip audited and counted once a window,
--                                   insurance._report_account_ceiling).
-- Past a limit, further attempts are refused ({"error": "RATE_LIMITED", "retryAfter": s})
-- until its window ends. The client address is the app's (app/addresses.py: an IPv6 client
-- comes as its /64).
-- An attempt is counted BEFORE the app verifies the password. login_user() reserves
-- the attempt atomically against every counter (one upsert, under the rows' locks) and refuses
-- once a limit is reached, so a burst of parallel wrong passwords gets at most 5 evaluations
-- per (e-mail, address) per window, whatever the concurrency. login_succeeded() refunds the
-- reservation: it clears its own (e-mail, address) counter and gives the e-mail and the
-- address their attempt back (an owner's success never resets what others spent).

CREATE TABLE insurance.dashboard_login_failures (
  key         text PRIMARY KEY CHECK (key ~ '^(email|email\+ip|ip):.'),  -- see _login_keys
  -- squawk-ignore prefer-bigint-over-int -- failed logins of one key in one window, capped by the lockout
  failures    integer NOT NULL CHECK (failures > 0),
  window_ends timestamptz NOT NULL
);
CREATE INDEX dashboard_login_failures_window_ends_idx ON insurance.dashboard_login_failures (window_ends);
COMMENT ON TABLE insurance.dashboard_login_failures IS
  'Failed dashboard logins per (e-mail, address), per address and per e-mail, in fixed 15-minute windows';
-- Only the SECURITY DEFINER functions below touch it.
ALTER TABLE insurance.dashboard_login_failures ENABLE ROW LEVEL SECURITY;

COMMIT;
