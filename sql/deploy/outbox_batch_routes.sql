-- Deploy insurance:outbox_batch_routes to pg
-- requires: outbox_functions
-- The worker used to know which API paths it could send together, and where. The database,
-- which enqueues those calls, now says it on the row: a call to a url of outbox.batch_routes
-- carries the header X-Outbox-Batch with the url that accepts many of them at once (the
-- outbox batch protocol, see app/worker.py). The worker groups rows by that header and knows
-- no path of the API.
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE TABLE outbox.batch_routes (
  url       text PRIMARY KEY CHECK (url ~ '^/'),
  batch_url text NOT NULL CHECK (batch_url ~ '^/')
);
COMMENT ON TABLE outbox.batch_routes IS 'API paths whose outbox calls may travel together, and the path that takes them';
INSERT INTO outbox.batch_routes (url, batch_url) VALUES
  ('/api/integrations/dispatch', '/api/integrations/dispatch-batch'),
  ('/api/integrations/dispatch-v2', '/api/integrations/dispatch-batch'),
  ('/api/integrations/retry', '/api/integrations/dispatch-batch');

-- _mark_batch(): BEFORE INSERT on outbox.http_requests; a POST to a batch route carries the
-- X-Outbox-Batch header naming the route's batch url.
CREATE FUNCTION outbox._mark_batch() RETURNS trigger
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _batch text;
BEGIN
  IF NEW.method = 'POST' THEN
    SELECT b.batch_url INTO _batch FROM outbox.batch_routes b WHERE b.url = NEW.url;
    IF FOUND THEN
      NEW.headers := coalesce(NEW.headers, '{}') || pg_catalog.jsonb_build_object('X-Outbox-Batch', _batch);
    END IF;
  END IF;
  RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION outbox._mark_batch() FROM PUBLIC;

GRANT SELECT ON outbox.batch_routes TO insurance_service;

CREATE TRIGGER http_requests_mark_batch BEFORE INSERT ON outbox.http_requests
  FOR EACH ROW EXECUTE FUNCTION outbox._mark_batch();

COMMIT;
