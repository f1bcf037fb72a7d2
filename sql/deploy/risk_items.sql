-- Deploy insurance:risk_items to pg
-- A risk item is an insured policy line. Holders reach it through authorized_claimants,
-- channels through channel_id: both by RLS policies that come with their surfaces.
-- Reworked after v0.9.0 (issue 30): risk_items_policy_uid_prefix_idx, the back-office search by
-- a policy number's beginning. Restated whole, so that it runs over the v0.9.0 change (IF NOT
-- EXISTS, OR REPLACE; a policy is dropped and made again in the same transaction).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;
-- Over v0.9.0 the statements below find their tables and take their locks one by one (a
-- trigger, row level security, a policy): take them first, in the order the app's statements
-- take them (an item before its channel's count), so that under traffic the deploy waits
-- behind a request instead of deadlocking with it (tests/test_upgrade.py found one).
LOCK TABLE insurance.risk_items, insurance.channel_item_counts IN ACCESS EXCLUSIVE MODE;

CREATE TABLE IF NOT EXISTS insurance.risk_items (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uid             uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  package_id      bigint NOT NULL REFERENCES insurance.packages,
  channel_id      uuid REFERENCES insurance.channels,
  policy_uid      text NOT NULL CHECK (length(policy_uid) BETWEEN 1 AND 100),
  status          text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'cancelled', 'expired')),
  variant         text NOT NULL,
  insured_subject jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(insured_subject) = 'object'),
  -- metadata.integration holds state, externalId, emissionId, error after a dispatch.
  metadata        jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (package_id, policy_uid),
  -- The variant must be one the package sells.
  FOREIGN KEY (package_id, variant) REFERENCES insurance.package_variants (package_id, code)
);
CREATE INDEX IF NOT EXISTS risk_items_channel_id_idx ON insurance.risk_items (channel_id, id);
-- A channel's list of one policy (gateway ?policy_uid=): an index range, not the channel's items.
CREATE INDEX IF NOT EXISTS risk_items_channel_policy_idx ON insurance.risk_items (channel_id, policy_uid);
COMMENT ON TABLE insurance.risk_items IS 'Insured risk items (policies); metadata.integration records the last dispatch';

CREATE OR REPLACE FUNCTION insurance.touch_updated_at() RETURNS trigger
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  NEW.updated_at := now();
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION insurance.touch_updated_at() IS 'BEFORE UPDATE trigger: keeps updated_at current';

CREATE OR REPLACE TRIGGER risk_items_touch_updated_at BEFORE UPDATE ON insurance.risk_items
  FOR EACH ROW EXECUTE FUNCTION insurance.touch_updated_at();

-- How many items each channel holds: the gateway lists' `total`, read by key instead of counted
-- on every request (DESIGN.md §7, issue 23). Kept in the same transaction as the insert, delete
-- or move of an item. An insert takes the channel's row lock until it commits: inserts of one
-- channel queue on it for the end of their transactions (measured by bench/scale.py and the
-- gateway benchmarks; the alternative is emission_counts' append-only deltas, folded on read).
CREATE TABLE IF NOT EXISTS insurance.channel_item_counts (
  channel_id uuid PRIMARY KEY REFERENCES insurance.channels ON DELETE CASCADE,
  count      bigint NOT NULL CHECK (count >= 0)
);
COMMENT ON TABLE insurance.channel_item_counts IS
  'Risk items per channel, kept by the triggers of risk_items in the same transaction; no row: none yet';
ALTER TABLE insurance.channel_item_counts ENABLE ROW LEVEL SECURITY;  -- no policy: through the functions only

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
COMMENT ON FUNCTION insurance._count_channel_items() IS
  'Statement trigger of risk_items (insert, delete; transition tables): adds or takes the items of each channel '
  'in channel_item_counts. Trigger only.';
REVOKE ALL ON FUNCTION insurance._count_channel_items() FROM PUBLIC;

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
COMMENT ON FUNCTION insurance._move_channel_item() IS
  'Row trigger of risk_items when channel_id changes (an operator moves an item): moves it between the counts '
  'of channel_item_counts. Trigger only.';
REVOKE ALL ON FUNCTION insurance._move_channel_item() FROM PUBLIC;

CREATE OR REPLACE TRIGGER risk_items_count_insert AFTER INSERT ON insurance.risk_items
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION insurance._count_channel_items();
CREATE OR REPLACE TRIGGER risk_items_count_delete AFTER DELETE ON insurance.risk_items
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION insurance._count_channel_items();
-- A row trigger: a statement trigger cannot name a column (UPDATE OF) and have transition
-- tables, and every emission updates its item's metadata.
CREATE OR REPLACE TRIGGER risk_items_count_move AFTER UPDATE OF channel_id ON insurance.risk_items
  FOR EACH ROW WHEN (OLD.channel_id IS DISTINCT FROM NEW.channel_id)
  EXECUTE FUNCTION insurance._move_channel_item();

GRANT SELECT, UPDATE (insured_subject) ON insurance.risk_items TO insurance_holder;
GRANT SELECT, INSERT (package_id, channel_id, policy_uid, variant, insured_subject, metadata, status)
   ON insurance.risk_items TO insurance_channel;
GRANT SELECT, INSERT, UPDATE ON insurance.risk_items TO insurance_service;
GRANT SELECT ON insurance.risk_items TO insurance_dashboard;
ALTER TABLE insurance.risk_items ENABLE ROW LEVEL SECURITY;

-- The orchestrator's canonical StandardRiskItem, built by one function as JSON, and the
-- read policies the service role needs for it (inserts/updates come with the pipeline).

-- The service role (integrations, worker, retry sweep) reads every risk item.
DROP POLICY IF EXISTS risk_items_select_service ON insurance.risk_items;
CREATE POLICY risk_items_select_service ON insurance.risk_items
  FOR SELECT TO insurance_service USING (true);
-- metadata.integration is written by the service role.
DROP POLICY IF EXISTS risk_items_update_service ON insurance.risk_items;
CREATE POLICY risk_items_update_service ON insurance.risk_items
  FOR UPDATE TO insurance_service USING (true) WITH CHECK (true);

DROP POLICY IF EXISTS risk_items_select_channel ON insurance.risk_items;
CREATE POLICY risk_items_select_channel ON insurance.risk_items
  FOR SELECT TO insurance_channel
  USING (channel_id = (SELECT insurance.claim('sub'))::uuid);

DROP POLICY IF EXISTS risk_items_insert_channel ON insurance.risk_items;
CREATE POLICY risk_items_insert_channel ON insurance.risk_items
  FOR INSERT TO insurance_channel
  WITH CHECK (channel_id = (SELECT insurance.claim('sub'))::uuid);

-- Its own item count (the gateway lists' total).
GRANT SELECT ON insurance.channel_item_counts TO insurance_channel;
DROP POLICY IF EXISTS channel_item_counts_select_channel ON insurance.channel_item_counts;
CREATE POLICY channel_item_counts_select_channel ON insurance.channel_item_counts
  FOR SELECT TO insurance_channel
  USING (channel_id = (SELECT insurance.claim('sub'))::uuid);
DROP POLICY IF EXISTS risk_items_select_dashboard ON insurance.risk_items;
CREATE POLICY risk_items_select_dashboard ON insurance.risk_items
  FOR SELECT TO insurance_dashboard
  USING ((SELECT insurance.claim('role')) = 'dashboard' AND (SELECT insurance.claim('sub')) IS NOT NULL);

-- A policy number is unique per package only; the search looks it up alone, in any case.
CREATE INDEX IF NOT EXISTS risk_items_policy_uid_lower_idx ON insurance.risk_items (pg_catalog.lower(policy_uid));
-- And by its beginning (dashboard.search): a range in byte order, whatever the collation.
CREATE INDEX IF NOT EXISTS risk_items_policy_uid_prefix_idx ON insurance.risk_items (pg_catalog.lower(policy_uid) text_pattern_ops);

COMMIT;
