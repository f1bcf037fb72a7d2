-- Revert insurance:dashboard_outbox from pg
-- Back to v0.9.0: its functions as they were there (CREATE OR REPLACE).
-- The back-office outbox page: list outbound calls and dead letters, retry them (audited)
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- What a back-office user reads and does, through tRPC (/api/trpc) and the back-office page
-- (/backoffice). Reads run as insurance_dashboard under its policies; the two mutations are
-- SECURITY DEFINER entry points that check the role, act, and write the audit row (actor: the
-- session's e-mail) in the same transaction.

-- The back-office lists the outbox (it had SELECT on the table, not USAGE on its schema).
GRANT USAGE ON SCHEMA outbox TO insurance_dashboard;

-- _outbox_url(url): where a row goes, without what may be a secret (a webhook's path, a query).
CREATE OR REPLACE FUNCTION dashboard._outbox_url(_url text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
  SELECT CASE WHEN _url LIKE '/%' THEN _url
              ELSE coalesce(substring(_url FROM '^(https?://[^/?#]+)'), '') || '/…' END
$$;
COMMENT ON FUNCTION dashboard._outbox_url(text) IS
  'Where an outbox row goes, without what may be a secret (path and query of an absolute URL). '
  'Dashboard role.';
-- list_outbox(dead, after_id, limit): outbox rows not delivered, oldest first, in keyset pages
-- on id: the live ones (dead false) or the dead letters (dead true). {items[{id, url,
-- emissionId, attempts, deliverAfter, deadAt, leased, lastStatus, lastError, createdAt, channelId (a partner
-- webhook's channel), eventType}], nextCursor}.
CREATE OR REPLACE FUNCTION dashboard.list_outbox(_dead boolean, _after_id bigint, _limit integer) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _rows jsonb;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_dashboard');
  END IF;
  IF _limit IS NULL OR _limit NOT BETWEEN 1 AND 100 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'limit must be between 1 and 100', DETAIL = 'BAD_REQUEST';
  END IF;
  SELECT jsonb_agg(jsonb_build_object(
           'id', o.id, 'url', dashboard._outbox_url(o.url),
           'emissionId', coalesce(o.body -> 'emissionId', CASE WHEN o.channel_id IS NOT NULL THEN o.body #> '{data,emissionId}' END),
           'attempts', o.attempts, 'deliverAfter', o.deliver_after, 'deadAt', o.dead_at,
           'leased', o.lease_until > pg_catalog.now(), 'lastStatus', o.last_status,
           'lastError', left(o.last_error, 300), 'createdAt', o.created_at,
           'channelId', o.channel_id,
           'eventType', CASE WHEN o.channel_id IS NOT NULL THEN o.body ->> 'type' END) ORDER BY o.id)
    INTO _rows
    FROM (SELECT * FROM outbox.http_requests o
           WHERE o.delivered_at IS NULL AND (o.dead_at IS NOT NULL) = coalesce(_dead, false)
             AND (_after_id IS NULL OR o.id > _after_id)
           ORDER BY o.id LIMIT _limit + 1) o;
  RETURN jsonb_build_object(
    'items', coalesce((SELECT jsonb_agg(x) FROM jsonb_array_elements(_rows) WITH ORDINALITY a(x, n) WHERE n <= _limit), '[]'),
    'nextCursor', CASE WHEN jsonb_array_length(coalesce(_rows, '[]')) > _limit
                       THEN (_rows -> (_limit - 1) ->> 'id') END);
END
$$;
COMMENT ON FUNCTION dashboard.list_outbox(boolean, bigint, integer) IS
  'Undelivered outbox rows, live or (_dead) dead letters, oldest first, keyset on id: {items, '
  'nextCursor}; raises PT400 for a limit outside 1..100. Dashboard role.';

-- retry_outbox(ids): the back-office's retry of outbox rows, live or dead: due now, attempts
-- from zero (outbox.retry_requests, which writes the audit row 'outbox.retry' with the
-- session's user as actor). Returns [{id, result}], result queued, delivered or not_found.
CREATE OR REPLACE FUNCTION dashboard.retry_outbox(_ids bigint[]) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  IF insurance.claim('role') IS DISTINCT FROM 'dashboard' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'a dashboard session is required', DETAIL = 'UNAUTHORIZED';
  END IF;
  PERFORM pg_catalog.set_config('insurance.audit_via', 'backoffice', true);  -- its audit row's via
  RETURN outbox.retry_requests(dashboard._actor(), _ids);
END
$$;
COMMENT ON FUNCTION dashboard.retry_outbox(bigint[]) IS
  'Puts outbox rows _ids, live or dead, back in the queue (outbox.retry_requests, audited with the '
  'session''s user); returns [{id, result}]. Dashboard session only.';
REVOKE ALL ON FUNCTION dashboard._outbox_url(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dashboard.list_outbox(boolean, bigint, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION dashboard.retry_outbox(bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard._outbox_url(text) TO insurance_dashboard;
GRANT EXECUTE ON FUNCTION dashboard.list_outbox(boolean, bigint, integer) TO insurance_dashboard, insurance_app;
GRANT EXECUTE ON FUNCTION dashboard.retry_outbox(bigint[]) TO insurance_dashboard, insurance_app;

COMMIT;
