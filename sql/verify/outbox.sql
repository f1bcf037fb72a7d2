-- Verify insurance:outbox on pg
SELECT id, method, url, headers, body, deliver_after, attempts, lease_until, leased_by,
       delivered_at, last_status, last_error, created_at
  FROM outbox.http_requests WHERE false;
