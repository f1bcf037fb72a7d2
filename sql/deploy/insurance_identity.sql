-- Deploy insurance:insurance_identity to pg
-- Who is calling, as the transaction says. As in PostgREST, the token's claims reach SQL only
-- through the transaction (`set_config('request.jwt.claims', '<json>', true)`) and the caller's
-- surface through the role switched to (`set_config('role', ..., true)`), both set by app/db.py
-- in the statement of the call itself.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- claims() and claim() are SQL-standard bodies (BEGIN ATOMIC) without a SET clause, so the
-- planner inlines them into the RLS policies that call them: a SET clause forbids inlining,
-- and every RLS-filtered query then planned both bodies again. A BEGIN ATOMIC body binds
-- every name when it is created, so no search_path can redirect it. In a policy, write
-- `(SELECT insurance.claim('email'))` so that it runs once per query, not once per row.

-- nullif: a pooled connection keeps an empty string after the transaction that set it.
CREATE FUNCTION insurance.claims() RETURNS jsonb
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT coalesce(nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb, '{}'::jsonb);
END;
COMMENT ON FUNCTION insurance.claims() IS
  'The current request''s JWT claims (request.jwt.claims), or ''{}'' when none are set. Any role; inlined into policies.';

CREATE FUNCTION insurance.claim(_name text) RETURNS text
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT insurance.claims() ->> _name;
END;
COMMENT ON FUNCTION insurance.claim(text) IS
  'One claim of the current request as text, or NULL. Any role; inlined into policies.';
GRANT EXECUTE ON FUNCTION insurance.claims() TO insurance_anon, insurance_holder, insurance_channel, insurance_service, insurance_dashboard;
GRANT EXECUTE ON FUNCTION insurance.claim(text) TO insurance_anon, insurance_holder, insurance_channel, insurance_service, insurance_dashboard;

-- require_role: the first statement of every entry point. EXECUTE alone cannot hold an entry
-- point to its surface: the app's login names the function before the role switch of the
-- same statement takes effect, so it is granted EXECUTE on every entry point. The caller is
-- therefore the role switched to, or, where none was, the session's login; a login's name
-- plays no part, so any login that plays the app's part is held to the same rule.
-- Superusers and members of insurance_owner (operators, migrations, pgTAP) pass: they could
-- run the body's statements themselves. The slow path (a catalog look-up) is taken only by
-- a call that is about to be refused or is an operator's.
CREATE FUNCTION insurance.require_role(VARIADIC _allowed text[])
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = ''
AS $$
DECLARE
  _caller text := pg_catalog.current_setting('role');
BEGIN
  IF _caller = 'none' THEN
    _caller := session_user;
  END IF;
  IF _caller = ANY (_allowed) THEN
    RETURN;
  END IF;
  IF pg_catalog.pg_has_role(_caller, 'insurance_owner', 'MEMBER') THEN  -- superusers are members
    RETURN;
  END IF;
  RAISE insufficient_privilege
    USING MESSAGE = pg_catalog.format('role %s may not call this entry point', _caller);
END
$$;
COMMENT ON FUNCTION insurance.require_role(text[]) IS
  'Returns when the caller (the role switched to, else the session''s login) is one of _allowed, '
  'a superuser or a member of insurance_owner; raises 42501 otherwise. Any role (it reveals nothing).';
GRANT EXECUTE ON FUNCTION insurance.require_role(text[]) TO PUBLIC;

COMMIT;
