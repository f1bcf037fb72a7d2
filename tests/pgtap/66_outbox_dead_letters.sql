-- Outbox dead letters: a row tried max_attempts times dies, is never claimed or swept back,
-- is listed and put back in the queue by an operator (audited).
BEGIN;
\ir helpers/common.psql
SELECT plan(14);

DELETE FROM outbox.http_requests;
SELECT outbox.http_post('https://unreachable.example.com/hook', '{"n": 1}');
SELECT outbox.http_post('/api/integrations/dispatch', '{"n": 2}');
CREATE FUNCTION pg_temp.row(n int) RETURNS outbox.http_requests LANGUAGE sql AS $$
  SELECT * FROM outbox.http_requests WHERE (body ->> 'n')::int = n $$;
CREATE FUNCTION pg_temp.fail(n int, status int DEFAULT NULL, retry boolean DEFAULT false, max int DEFAULT 2) RETURNS integer
LANGUAGE sql AS $$
  SELECT outbox.record_deliveries('w', jsonb_build_array(jsonb_build_object(
           'id', (pg_temp.row(n)).id, 'status', status, 'error', 'no', 'retry', retry)), max) $$;

SELECT pg_temp.act_as('insurance_service');
SELECT is(jsonb_array_length(outbox.claim_batch('w', 10, 30) -> 'requests'), 2, 'both rows are claimed');
SELECT is(pg_temp.fail(1), 0, 'a failed delivery is not done');
SELECT is(pg_temp.fail(2, 401, true), 0, 'a 401 the worker calls a configuration error is not done either');
SELECT ok((SELECT delivered_at IS NULL AND dead_at IS NULL AND last_status = 401 AND deliver_after > now()
             FROM pg_temp.row(2)), 'it waits for its backoff, alive');
SELECT pg_temp.as_operator();
-- An hour later (the longest backoff):
SELECT pg_temp.age_rows('outbox.http_requests', '1 hour');
SELECT pg_temp.act_as('insurance_service');
SELECT is(jsonb_array_length(outbox.claim_batch('w', 10, 30) -> 'requests'), 2, 'both are tried a second time');
SELECT is(pg_temp.fail(1) + pg_temp.fail(2, 403, true), 0, 'and fail again');
SELECT ok((SELECT bool_and(dead_at IS NOT NULL AND delivered_at IS NULL AND attempts = 2) FROM outbox.http_requests),
          'at max_attempts both rows are dead, kept, not delivered');
SELECT pg_temp.as_operator();
SELECT pg_temp.age_rows('outbox.http_requests', '1 hour');
SELECT pg_temp.act_as('insurance_service');
SELECT is(jsonb_array_length(outbox.claim_batch('w', 10, 30) -> 'requests'), 0, 'a dead row is never claimed');
SELECT is(integrations.sweep() ->> 'retriesQueued', '0', 'nor swept back');
SELECT pg_temp.as_operator();
SELECT ok((SELECT bool_and(dead_at IS NOT NULL) FROM outbox.http_requests), 'the sweep leaves dead rows dead');

SELECT is(jsonb_array_length(outbox.list_requests(true, 10)), 2, 'list_requests lists the dead rows');
SELECT is(outbox.retry_requests('cli:pgtap', ARRAY[(pg_temp.row(1)).id, -7]),
          jsonb_build_array(jsonb_build_object('id', -7, 'result', 'not_found'),
                            jsonb_build_object('id', (pg_temp.row(1)).id, 'result', 'queued')),
          'retry_requests queues a dead row and says which ids it does not know');
SELECT ok((SELECT r.dead_at IS NULL AND r.attempts = 0 AND r.deliver_after <= now()
                  AND EXISTS (SELECT FROM insurance.audit_log a WHERE a.action = 'outbox.retry' AND a.actor = 'cli:pgtap'
                                 AND a.targets @> jsonb_build_array(r.id)
                                 AND a.details -> 'outcome' @> jsonb_build_array(jsonb_build_object('id', r.id, 'result', 'queued')))
             FROM pg_temp.row(1) r), 'the row is alive, due now, from attempt 0, and the retry is audited');
SELECT is((SELECT a.result FROM insurance.audit_log a WHERE a.action = 'outbox.retry' ORDER BY a.id DESC LIMIT 1),
          'OUTBOX_ROW_NOT_FOUND', 'an id that names no row: the audit row is not "ok" (the command exits 1)');

SELECT * FROM finish();
ROLLBACK;
