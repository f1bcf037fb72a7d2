-- Deploy insurance:admin to pg
-- The command line's SQL: an admin schema of functions that change and list packages, channels, users, providers and orders, each mutation audited.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- _refused: audit a refused command and answer its error.
CREATE FUNCTION admin._refused(_actor text, _action text, _targets jsonb, _code text, _message text)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
  PERFORM insurance.record_audit(_actor, _action, _targets, _code);
  RETURN pg_catalog.jsonb_build_object('error', _code, 'message', _message);
END
$$;
COMMENT ON FUNCTION admin._refused(text, text, jsonb, text, text) IS
  'Writes the audit row of a refused command (result refused, the code in details) and returns {error: '
  '_code, message: _message}. Helper of the admin functions.';

COMMIT;
