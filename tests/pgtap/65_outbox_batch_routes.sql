-- outbox.batch_routes: a row says itself whether it may travel with others, and where.
BEGIN;
SELECT plan(3);

CREATE TEMP TABLE _rows AS SELECT
  outbox.http_post('/api/integrations/dispatch', '{"record": {"id": 1}}', '{"X-Trace": "t"}') AS dispatch,
  outbox.http_post('/api/integrations/retry', '{"emissionId": 1}') AS retry,
  outbox.http_post('https://chat.example/hook', '{"text": "x"}') AS chat;

SELECT is((SELECT headers FROM outbox.http_requests WHERE id = (SELECT dispatch FROM _rows)),
          '{"X-Trace": "t", "X-Outbox-Batch": "/api/integrations/dispatch-batch"}'::jsonb,
          'an emission route''s row names its batch url, beside its own headers');
SELECT is((SELECT headers ->> 'X-Outbox-Batch' FROM outbox.http_requests WHERE id = (SELECT retry FROM _rows)),
          '/api/integrations/dispatch-batch', 'so does a delayed retry');
SELECT is((SELECT headers FROM outbox.http_requests WHERE id = (SELECT chat FROM _rows)),
          '{}'::jsonb, 'any other call travels alone');

SELECT * FROM finish();
ROLLBACK;
