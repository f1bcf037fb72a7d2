-- Revert insurance:dashboard_sessions from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.session_claims_or_deny(bytea);
DROP FUNCTION dashboard.logout(bytea);
DROP FUNCTION dashboard.session_claims(bytea);
DROP FUNCTION dashboard.login_succeeded(text,text,bytea,integer,inet,text);
DROP FUNCTION dashboard.login_user(text,inet);
DROP FUNCTION dashboard._login_keys(text,inet);

COMMIT;
