-- Deploy insurance:outbox_delivered_bodies to pg
-- A delivered call needs no body: the moment a row is marked delivered its body is reduced to
-- the ids it named (a dispatch's record id and uid, an order id, an emission id, what happened),
-- and anything else (a chat notice's text, any other payload) is dropped, so that the outbox
-- keeps ids, URLs, states and codes, not copies of what it carried. A partner webhook's row
-- (channel_id set) keeps its body: the partner may ask for a redelivery of it, and it carries
-- ids and states only.
-- Reworked after v1.1.0 (issue 43): a body that holds nothing but ids already (every /dispatch,
-- {type, table, record: {id, uid}}, and every /retry since 1.1.0) skips the trigger: its WHEN
-- says so, where the function ran for each delivered row to write the same body again. Restated
-- whole (CREATE OR REPLACE).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE OR REPLACE FUNCTION outbox._drop_delivered_body() RETURNS trigger
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  NEW.body := nullif(pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                'type', NEW.body -> 'type', 'table', NEW.body -> 'table',
                'record', nullif(pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                            'id', NEW.body #> '{record,id}', 'uid', NEW.body #> '{record,uid}')), '{}'),
                'order_id', NEW.body -> 'order_id', 'emission_id', NEW.body -> 'emission_id',
                'emissionId', NEW.body -> 'emissionId')), '{}');
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION outbox._drop_delivered_body() IS
  'BEFORE UPDATE trigger of outbox.http_requests: a row that becomes delivered keeps only the ids of its body '
  '(type, table, record id and uid, order_id, emission_id, emissionId; NULL when none), unless it is a partner '
  'webhook''s (channel_id set: redeliveries resend it). Trigger only.';
REVOKE ALL ON FUNCTION outbox._drop_delivered_body() FROM PUBLIC;
-- The WHEN clause keeps every other update (leases, retries) and every body of ids alone (the
-- keys the function keeps, a record of id and uid) free of the call.
-- SHARE ROW EXCLUSIVE on http_requests: a catalog change only, held for a moment
CREATE OR REPLACE TRIGGER http_requests_drop_delivered_body BEFORE UPDATE OF delivered_at ON outbox.http_requests
  FOR EACH ROW WHEN (OLD.delivered_at IS NULL AND NEW.delivered_at IS NOT NULL AND NEW.channel_id IS NULL
                     AND NEW.body IS NOT NULL
                     AND (pg_catalog.jsonb_typeof(NEW.body) <> 'object'
                          OR NEW.body - '{type,table,record,order_id,emission_id,emissionId}'::text[] <> '{}'
                          OR pg_catalog.jsonb_typeof(coalesce(NEW.body -> 'record', '{}')) <> 'object'
                          OR coalesce(NEW.body -> 'record', '{}') - '{id,uid}'::text[] <> '{}'))
  EXECUTE FUNCTION outbox._drop_delivered_body();

COMMIT;
