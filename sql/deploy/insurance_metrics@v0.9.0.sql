-- Deploy insurance:insurance_metrics to pg
-- The database's gauges for GET /metrics, read in one call at scrape time. Every part is an
-- index lookup or a small table, however full the tables (DESIGN.md §7): the pending and dead
-- outbox rows from outbox.request_counts, the oldest pending row through the pending index, the
-- emission totals from insurance.emission_counts, the sweep's heartbeat row.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- read_metrics: {outboxPending (live rows not delivered), outboxDead (dead letters), outboxOldestPendingAgeSeconds,
-- webhooksPending, webhooksOldestPendingAgeSeconds, webhooksDead (the partner webhook rows among them), emissions:
-- [{status, provider, count}], retrySweepLastRunAt (epoch seconds or null), accountCeilingTrips
-- ({kind: trips so far})}.
-- outboxOldestPendingAgeSeconds: how long the most overdue undelivered row has been due
-- (0 when none is due; a row delayed into the future is not late).
CREATE FUNCTION insurance.read_metrics() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _outbox record;
BEGIN
  PERFORM insurance.require_role('insurance_service');
  SELECT * INTO _outbox FROM outbox._fold_request_counts();
  RETURN pg_catalog.jsonb_build_object(
    'outboxPending', _outbox.pending,
    'outboxOldestPendingAgeSeconds', coalesce(greatest(0, extract(epoch FROM pg_catalog.now() - (
        SELECT min(r.deliver_after) FROM outbox.http_requests r
         WHERE r.delivered_at IS NULL AND r.dead_at IS NULL))), 0),
    'outboxDead', _outbox.dead,
    'webhooksPending', (SELECT count(*) FROM outbox.http_requests r
                         WHERE r.channel_id IS NOT NULL AND r.delivered_at IS NULL AND r.dead_at IS NULL),
    'webhooksOldestPendingAgeSeconds', coalesce(greatest(0, extract(epoch FROM pg_catalog.now() - (
        SELECT min(r.deliver_after) FROM outbox.http_requests r
         WHERE r.channel_id IS NOT NULL AND r.delivered_at IS NULL AND r.dead_at IS NULL))), 0),
    'webhooksDead', (SELECT count(*) FROM outbox.http_requests r WHERE r.dead_at IS NOT NULL AND r.channel_id IS NOT NULL),
    'emissions', insurance.fold_emission_counts(),
    'retrySweepLastRunAt', (SELECT extract(epoch FROM j.last_run_at) FROM insurance.job_runs j
                             WHERE j.job = 'retry_sweep'),
    'accountCeilingTrips', (SELECT coalesce(pg_catalog.jsonb_object_agg(c.kind, c.trips), '{}')
                              FROM insurance.account_ceiling_counts c));
END
$$;
COMMENT ON FUNCTION insurance.read_metrics() IS
  'Every database gauge of /metrics in one call: outbox pending/dead/oldest age (all rows and partner webhooks), emission counts per '
  'status and provider, last retry sweep, account-wide ceiling trips by kind. Service role.';
REVOKE ALL ON FUNCTION insurance.read_metrics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION insurance.read_metrics() TO insurance_service, insurance_app;

COMMIT;
