-- Revert insurance:outbox from pg
-- Back to v0.9.0: without the webhook-emission index; its functions as they were there.
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP INDEX outbox.http_requests_webhook_emission_idx;

CREATE OR REPLACE FUNCTION outbox._mark_batch() RETURNS trigger
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

CREATE OR REPLACE FUNCTION outbox._count_requests() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO outbox.request_count_deltas (state, delta)
    SELECT d.state, count(*) FROM (
      SELECT CASE WHEN n.dead_at IS NOT NULL THEN 'dead' WHEN n.delivered_at IS NULL THEN 'pending' END AS state
        FROM new_rows n) d
     WHERE d.state IS NOT NULL GROUP BY d.state;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO outbox.request_count_deltas (state, delta)
    SELECT d.state, -count(*) FROM (
      SELECT CASE WHEN o.dead_at IS NOT NULL THEN 'dead' WHEN o.delivered_at IS NULL THEN 'pending' END AS state
        FROM old_rows o) d
     WHERE d.state IS NOT NULL GROUP BY d.state;
  ELSE  -- the net change of each state: a claim changes none and writes nothing
    INSERT INTO outbox.request_count_deltas (state, delta)
    SELECT d.state, sum(d.delta) FROM (
      SELECT CASE WHEN n.dead_at IS NOT NULL THEN 'dead' WHEN n.delivered_at IS NULL THEN 'pending' END AS state,
             1 AS delta
        FROM new_rows n
      UNION ALL
      SELECT CASE WHEN o.dead_at IS NOT NULL THEN 'dead' WHEN o.delivered_at IS NULL THEN 'pending' END, -1
        FROM old_rows o) d
     WHERE d.state IS NOT NULL GROUP BY d.state HAVING sum(d.delta) <> 0;
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION outbox._fold_request_counts() RETURNS TABLE (pending bigint, dead bigint)
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  WITH folded AS (DELETE FROM outbox.request_count_deltas RETURNING state, delta)
  UPDATE outbox.request_counts c SET count = c.count + f.delta
    FROM (SELECT folded.state, sum(folded.delta) AS delta FROM folded GROUP BY folded.state) f
   WHERE c.state = f.state;
  RETURN QUERY SELECT (SELECT c.count FROM outbox.request_counts c WHERE c.state = 'pending'),
                      (SELECT c.count FROM outbox.request_counts c WHERE c.state = 'dead');
END
$$;

COMMIT;
