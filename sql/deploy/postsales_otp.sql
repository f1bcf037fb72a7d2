-- Deploy insurance:postsales_otp to pg
-- One row per issued one-time password. Only a keyed hash of the code is stored.
-- History rows let the database enforce the resend cooldown and the hourly caps. Each code
-- belongs to the client address that asked for it (ip: the address, an IPv6 client's /64, or
-- NULL without one): it is verified from there only, so no other address can supersede it or
-- spend its attempts.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.postsales_otp (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email       text NOT NULL CHECK (email = lower(email)),
  code_hash   bytea NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  -- squawk-ignore prefer-bigint-over-int -- failed verifications of one code, capped at a handful
  attempts    integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),  -- failed verifications
  consumed_at timestamptz,                                       -- set once: single use
  ip          inet,                                              -- the address that asked for it
  CHECK (expires_at > created_at)
);
CREATE INDEX postsales_otp_email_created_at_idx ON insurance.postsales_otp (email, created_at DESC);
COMMENT ON TABLE insurance.postsales_otp IS 'Issued post-sales OTPs: keyed hash, expiry, failed attempts';
COMMENT ON COLUMN insurance.postsales_otp.ip IS
  'The client address (an IPv6 client''s /64) that asked for the code, the only one it is verified from; NULL without one';

-- Only SECURITY DEFINER functions of postsales_otp_functions touch it.
ALTER TABLE insurance.postsales_otp ENABLE ROW LEVEL SECURITY;

COMMIT;
