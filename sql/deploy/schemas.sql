-- Deploy insurance:schemas to pg
-- insurance holds the tables; each surface gets a schema for the functions it calls,
-- so that a grant of USAGE says which role may call what.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';

CREATE EXTENSION IF NOT EXISTS pgcrypto;  -- digest, hmac, gen_random_bytes

CREATE SCHEMA insurance    AUTHORIZATION insurance_owner;
CREATE SCHEMA postsales    AUTHORIZATION insurance_owner;
CREATE SCHEMA gateway      AUTHORIZATION insurance_owner;
CREATE SCHEMA integrations AUTHORIZATION insurance_owner;
CREATE SCHEMA outbox       AUTHORIZATION insurance_owner;
CREATE SCHEMA dashboard    AUTHORIZATION insurance_owner;

COMMENT ON SCHEMA insurance IS 'Tables of the insurance back-end and helpers shared by every surface';
COMMENT ON SCHEMA postsales IS 'Functions of the holder post-sales API';
COMMENT ON SCHEMA gateway IS 'Functions of the partner gateway';
COMMENT ON SCHEMA integrations IS 'Emission state machine, dispatch and retries';
COMMENT ON SCHEMA outbox IS 'Durable outbound HTTP calls started by the database';
COMMENT ON SCHEMA dashboard IS 'Functions of the back-office dashboard';

GRANT USAGE ON SCHEMA insurance TO insurance_anon, insurance_holder, insurance_channel,
                                   insurance_service, insurance_dashboard;
GRANT USAGE ON SCHEMA postsales TO insurance_anon, insurance_holder, insurance_service;
GRANT USAGE ON SCHEMA gateway TO insurance_anon, insurance_channel;
GRANT USAGE ON SCHEMA integrations TO insurance_service, insurance_dashboard, insurance_holder;
GRANT USAGE ON SCHEMA outbox TO insurance_service;
GRANT USAGE ON SCHEMA dashboard TO insurance_anon, insurance_dashboard;

-- The app login reaches functions only inside a role switch of the same statement
-- (see app/db.py): it may name the schemas, and entry points grant it EXECUTE, but it
-- holds no table privilege of its own, so a call without the switch is denied.
GRANT USAGE ON SCHEMA insurance, postsales, gateway, integrations, outbox, dashboard TO insurance_app;

-- Functions are not callable by PUBLIC unless a change grants them.
ALTER DEFAULT PRIVILEGES FOR ROLE insurance_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;

-- admin: the command line's functions (app/cli.py); no role but the owner may call them.
CREATE SCHEMA admin AUTHORIZATION insurance_owner;
COMMENT ON SCHEMA admin IS 'Functions of the operator''s command line; every mutation audited';

CREATE SCHEMA webhooks AUTHORIZATION insurance_owner;
COMMENT ON SCHEMA webhooks IS 'Partner webhooks: signing salts, the events of emissions, their deliveries';
GRANT USAGE ON SCHEMA webhooks TO insurance_service, insurance_app;

COMMIT;
