-- Verify insurance:outbox_batch_routes on pg
SELECT url, batch_url FROM outbox.batch_routes WHERE false;
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'http_requests_mark_batch'
                   AND tgrelid = 'outbox.http_requests'::regclass), 'batch trigger missing';
END
$$;
