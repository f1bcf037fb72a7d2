-- Deploy insurance:dashboard_users to pg
-- requires: schemas
-- requires: email_address
-- Back-office users (argon2 password hashes) and their server-side sessions.
-- A session is found by the SHA-256 of its cookie value; revocable and expiring.
BEGIN;
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

COMMIT;
