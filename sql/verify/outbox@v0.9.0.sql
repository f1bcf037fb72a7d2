-- Verify insurance:outbox on pg
SELECT id, method, url, headers, body, deliver_after, attempts, lease_until, leased_by,
       delivered_at, last_status, last_error, created_at, dead_at, channel_id
  FROM outbox.http_requests WHERE false;
SELECT url, batch_url FROM outbox.batch_routes WHERE false;
SELECT 'outbox._mark_batch()'::regprocedure;
SELECT state, count FROM outbox.request_counts WHERE false;
SELECT state, delta FROM outbox.request_count_deltas WHERE false;
SELECT 'outbox._count_requests()'::regprocedure, 'outbox._fold_request_counts()'::regprocedure;
