-- Revert insurance:risk_items from pg
-- Back to v0.9.0: without the prefix index; its functions as they were there.
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP INDEX insurance.risk_items_policy_uid_prefix_idx;

CREATE OR REPLACE FUNCTION insurance.touch_updated_at() RETURNS trigger
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  NEW.updated_at := now();
  RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION insurance._count_channel_items() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO insurance.channel_item_counts AS c (channel_id, count)
    SELECT n.channel_id, count(*) FROM new_rows n WHERE n.channel_id IS NOT NULL
     GROUP BY n.channel_id ORDER BY n.channel_id  -- one lock order: no deadlock between two inserts
    ON CONFLICT (channel_id) DO UPDATE SET count = c.count + excluded.count;
  ELSE
    UPDATE insurance.channel_item_counts c SET count = c.count - d.n
      FROM (SELECT o.channel_id, count(*) AS n FROM old_rows o WHERE o.channel_id IS NOT NULL
             GROUP BY o.channel_id) d
     WHERE c.channel_id = d.channel_id;
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION insurance._move_channel_item() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  UPDATE insurance.channel_item_counts c SET count = c.count - 1 WHERE c.channel_id = OLD.channel_id;
  INSERT INTO insurance.channel_item_counts AS c (channel_id, count)
  SELECT NEW.channel_id, 1 WHERE NEW.channel_id IS NOT NULL
  ON CONFLICT (channel_id) DO UPDATE SET count = c.count + 1;
  RETURN NULL;
END
$$;

COMMIT;
