-- Verify insurance:outbox_delivered_bodies on pg
SELECT 'outbox._drop_delivered_body()'::regprocedure;
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'http_requests_drop_delivered_body'
                  AND tgrelid = 'outbox.http_requests'::regclass), 'trigger http_requests_drop_delivered_body missing';
END
$$;
