-- Deploy insurance:audit_log to pg
-- Who did what when. Every mutation an operator makes (back-office page, tRPC, command line)
-- writes one row, in the same transaction as the mutation, through insurance.record_audit().
-- Append-only: no role may update or delete a row; retention is a DBA decision.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.audit_log (
  id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at      timestamptz NOT NULL DEFAULT now(),
  actor   text NOT NULL CHECK (actor <> ''),      -- 'dashboard:<email>', 'cli:<os user>'
  on_behalf_of text CHECK (on_behalf_of <> ''),   -- the command line's --actor (a ticket, a colleague)
  via     text CHECK (via IN ('cli', 'backoffice', 'trpc')),  -- where the change came from
  action  text NOT NULL CHECK (action ~ '^[a-z][a-z_]*\.[a-z][a-zA-Z_]*$'),  -- 'emissions.retry'
  targets jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(targets) = 'array'),
  result  text NOT NULL CHECK (result <> ''),     -- 'ok', or the stable error code
  details jsonb CHECK (details IS NULL OR jsonb_typeof(details) = 'object')
);
-- The back-office reads the newest first, in keyset pages.
CREATE INDEX audit_log_at_idx ON insurance.audit_log (at DESC, id DESC);
COMMENT ON TABLE insurance.audit_log IS 'Append-only record of operator mutations (actor, action, targets, time, result)';
COMMENT ON COLUMN insurance.audit_log.actor IS 'Who made the change: dashboard:<email> of the session, or cli:<OS user> who ran the command';
COMMENT ON COLUMN insurance.audit_log.on_behalf_of IS 'The --actor given to the command line, kept beside the OS user; NULL when none';
COMMENT ON COLUMN insurance.audit_log.via IS 'Where the change came from: cli, backoffice or trpc';
COMMENT ON COLUMN insurance.audit_log.result IS 'ok, or the stable error code of a refusal';

ALTER TABLE insurance.audit_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY audit_log_select_dashboard ON insurance.audit_log FOR SELECT TO insurance_dashboard
  USING (true);
GRANT SELECT ON insurance.audit_log TO insurance_dashboard;

-- record_audit: append one row; called inside the mutating function's transaction, so the
-- row exists exactly when the mutation does. Not SECURITY DEFINER: its callers are the
-- owner's own SECURITY DEFINER entry points and the operator's command line. `via` comes from
-- details.via (the dashboard's entry points say it) or from the transaction's setting
-- insurance.audit_via, and on_behalf_of from insurance.audit_on_behalf_of: the command line
-- sets both in the transaction of its call (app/db.py call_admin).
CREATE FUNCTION insurance.record_audit(_actor text, _action text, _targets jsonb,
                                       _result text DEFAULT 'ok', _details jsonb DEFAULT NULL)
RETURNS bigint
LANGUAGE sql
SET search_path = ''
AS $$
  INSERT INTO insurance.audit_log (actor, on_behalf_of, via, action, targets, result, details)
  VALUES (_actor, nullif(pg_catalog.current_setting('insurance.audit_on_behalf_of', true), ''),
          coalesce(_details ->> 'via', nullif(pg_catalog.current_setting('insurance.audit_via', true), '')),
          _action, coalesce(_targets, '[]'), _result, _details)
  RETURNING id
$$;
COMMENT ON FUNCTION insurance.record_audit(text, text, jsonb, text, jsonb) IS
  'Appends one audit row (actor, action, targets, result, details; via from details.via or the '
  'transaction''s insurance.audit_via, on_behalf_of from insurance.audit_on_behalf_of) in the caller''s '
  'transaction, so it exists exactly when the mutation does. Owner-run SECURITY DEFINER functions and admin functions '
  'only.';
REVOKE EXECUTE ON FUNCTION insurance.record_audit(text, text, jsonb, text, jsonb) FROM PUBLIC;
-- Keyset pages on id (the log's own index orders by time).
CREATE INDEX audit_log_id_desc_idx ON insurance.audit_log (id DESC);

COMMIT;
