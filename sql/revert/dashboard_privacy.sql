-- Revert insurance:dashboard_privacy from pg: back to its v1.1.0 version. The functions this
-- version added are dropped, those it restated too, and the released script runs as it was, in the
-- same transaction (its BEGIN only warns that one is open; its COMMIT ends both), so that no
-- request finds them missing.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

DROP FUNCTION dashboard.view_emission(bigint);
DROP FUNCTION dashboard.view_risk_item(bigint, uuid, text);
DROP FUNCTION dashboard.audit_about(text, integer);
DROP FUNCTION dashboard.record_view(text, bigint[], uuid[], text[]);
DROP FUNCTION dashboard._record_view(text, text, bigint[], uuid[], text[]);
DROP FUNCTION dashboard.person_erase(text);
DROP FUNCTION dashboard.person_export(text);

\ir ../deploy/dashboard_privacy@v1.1.0.sql
