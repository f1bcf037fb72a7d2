-- The outbox: http_post, claim with a lease, record deliveries, release.
BEGIN;
\ir helpers/common.psql
SELECT plan(16);

DELETE FROM outbox.http_requests;  -- this transaction only (rolled back)
SELECT pg_temp.act_as('insurance_service');

SELECT ok(outbox.http_post('/api/integrations/dispatch', '{"a": 1}') > 0, 'http_post takes a path of the API');
SELECT ok(outbox.http_post('https://hooks.example.com/x', '{"b": 2}', '{"X-Test": "1"}') > 0,
          'http_post takes an absolute URL and headers');
SELECT ok(outbox.http_post('/api/integrations/retry', '{"emissionId": 1}', '{}', now() + interval '1 hour') > 0,
          'http_post takes a delivery time');
SELECT throws_ok($$SELECT outbox.http_post('ftp://x', '{}')$$, '23514', NULL, 'a url that is neither http(s) nor a path is refused');

SELECT is((outbox.claim_batch('w1', 10, 30) -> 'requests')::jsonb #>> '{0,url}', '/api/integrations/dispatch',
          'claim_batch leases due rows in delivery order');
SELECT is((SELECT count(*)::int FROM outbox.http_requests WHERE leased_by = 'w1'), 2,
          'only the two due rows are leased, the delayed one waits');
SELECT is(jsonb_array_length(outbox.claim_batch('w2', 10, 30) -> 'requests'), 0,
          'a leased row is not claimed by another worker');
SELECT ok((outbox.claim_batch('w2', 10, 30) ->> 'nextDueAt')::numeric > extract(epoch FROM now()),
          'claim_batch says when the next delayed row is due');

SELECT pg_temp.as_operator();
-- A minute later (the lease was 30 s):
SELECT pg_temp.age_rows('outbox.http_requests', '1 minute', $$url = '/api/integrations/dispatch'$$);
SELECT pg_temp.act_as('insurance_service');
SELECT is(outbox.claim_batch('w2', 10, 30) #>> '{requests,0,url}', '/api/integrations/dispatch',
          'a row whose lease expired (its worker died) is claimed again');
SELECT is((SELECT attempts FROM outbox.http_requests WHERE url = '/api/integrations/dispatch'), 2,
          'each claim counts a delivery attempt');

SELECT is(outbox.record_deliveries('w1', (SELECT jsonb_agg(jsonb_build_object('id', id, 'status', 200))
                                            FROM outbox.http_requests WHERE url = '/api/integrations/dispatch')), 0,
          'a worker that lost the lease cannot record the row');
SELECT is(outbox.record_deliveries('w2', (SELECT jsonb_agg(jsonb_build_object('id', id, 'status', 200))
                                            FROM outbox.http_requests WHERE url = '/api/integrations/dispatch')), 1,
          'a 200 completes the row');
SELECT is(outbox.record_deliveries('w1', (SELECT jsonb_agg(jsonb_build_object('id', id, 'status', 503, 'error', 'down'))
                                            FROM outbox.http_requests WHERE url LIKE 'https:%')), 0,
          'a 503 does not complete the row');
SELECT ok((SELECT deliver_after > now() AND lease_until IS NULL AND last_status = 503 AND last_error = 'down'
             FROM outbox.http_requests WHERE url LIKE 'https:%'),
          'a 503 puts the row back with a backoff and the answer recorded');

SELECT pg_temp.as_operator();
-- An hour later (the longest backoff):
SELECT pg_temp.age_rows('outbox.http_requests', '1 hour', $$url LIKE 'https:%'$$);
SELECT pg_temp.act_as('insurance_service');
SELECT is(outbox.release('w3', ARRAY(SELECT id FROM outbox.http_requests WHERE url LIKE 'https:%'
                                      AND (outbox.claim_batch('w3', 1, 30) IS NOT NULL))), 1,
          'release gives a leased row back');
SELECT is((SELECT lease_until FROM outbox.http_requests WHERE url LIKE 'https:%'), NULL,
          'a released row has no lease');

SELECT pg_temp.as_operator();
SELECT * FROM finish();
ROLLBACK;
