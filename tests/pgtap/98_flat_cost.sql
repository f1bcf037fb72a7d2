-- Flat cost as the tables fill (docs/performance.md): on tables holding tens of thousands of
-- rows, the outbox claim, an emission's recording, every list page and the metrics scrape read a
-- bounded number of rows and never scan the outbox, the risk items or the emissions sequentially,
-- whatever the planner estimates for a function's parameters (a LIMIT it cannot see is planned as
-- 10% of the table). What a call read is taken from the transaction's own statistics
-- (pg_stat_get_xact_*: tuples returned by the table's sequential scans and by its indexes).
-- The gateway's totals come from a count kept by triggers: checked after inserts and deletes.
-- A page's answers are stored documents (risk_item_documents) read by key: never scanned either.
BEGIN;
SELECT plan(36);

CREATE TEMP TABLE marks (rel regclass PRIMARY KEY, scans bigint, reads bigint);
CREATE FUNCTION pg_temp.reads(_rel regclass) RETURNS bigint LANGUAGE sql AS $$
  SELECT pg_stat_get_xact_tuples_returned(_rel)
       + coalesce((SELECT sum(pg_stat_get_xact_tuples_returned(i.indexrelid)) FROM pg_index i
                    WHERE i.indrelid = _rel), 0)::bigint
$$;
INSERT INTO marks (rel) VALUES ('outbox.http_requests'), ('insurance.risk_items'), ('insurance.integration_emissions'),
                                ('insurance.risk_item_documents'), ('insurance.audit_log');
-- mark(): remember the counters of the big tables; seq_scans(t) and reads_since(t) since then.
CREATE FUNCTION pg_temp.mark() RETURNS void LANGUAGE sql AS $$
  UPDATE pg_temp.marks SET scans = pg_stat_get_xact_numscans(rel), reads = pg_temp.reads(rel);
$$;
CREATE FUNCTION pg_temp.seq_scans(_rel regclass) RETURNS bigint LANGUAGE sql AS $$
  SELECT pg_stat_get_xact_numscans(_rel) - m.scans FROM pg_temp.marks m WHERE m.rel = _rel
$$;
CREATE FUNCTION pg_temp.reads_since(_rel regclass) RETURNS bigint LANGUAGE sql AS $$
  SELECT pg_temp.reads(_rel) - m.reads FROM pg_temp.marks m WHERE m.rel = _rel
$$;
GRANT SELECT, UPDATE ON pg_temp.marks TO PUBLIC;

-- A year in a small way: 40,000 items in one channel (each with a holder), 40,000 emissions
-- (a few FAILED, fewer ABANDONED), 40,000 outbox rows due (a backlog) and 40,000 delivered.
INSERT INTO insurance.channels (id, name, branches, api_key_hash) VALUES
  ('f1a70000-0000-4000-8000-000000000001', 'Flat', '{v1,v2}', public.digest('key-flat', 'sha256'));
INSERT INTO insurance.packages (uid, name) VALUES ('flat-pkg', 'Flat');
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, 'travel', 'Travel' FROM insurance.packages WHERE uid = 'flat-pkg';
INSERT INTO insurance.channel_packages (channel_id, package_id)
  SELECT 'f1a70000-0000-4000-8000-000000000001', id FROM insurance.packages WHERE uid = 'flat-pkg';
INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, insured_subject)
  SELECT p.id, 'f1a70000-0000-4000-8000-000000000001', 'flat-' || n, 'travel', '{"name": "Flat"}'
    FROM insurance.packages p, generate_series(1, 40000) n WHERE p.uid = 'flat-pkg';
INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
  SELECT id, 'Flat', CASE WHEN policy_uid IN ('flat-7', 'flat-77') THEN 'flat-holder@example.com'
                          ELSE 'f' || id || '@example.com' END, true, 100
    FROM insurance.risk_items WHERE policy_uid LIKE 'flat-%';
INSERT INTO insurance.integration_emissions (risk_item_id, provider, event, status, next_retry_at, attempts)
  SELECT id, 'PROVIDER_A', 'POLICY_CREATED',
         CASE WHEN id % 500 = 0 THEN 'ABANDONED' WHEN id % 20 = 0 THEN 'FAILED' ELSE 'SUCCESS' END,
         CASE WHEN id % 20 = 0 AND id % 500 <> 0 THEN now() + interval '1 day' END, 1
    FROM insurance.risk_items WHERE policy_uid LIKE 'flat-%';
INSERT INTO outbox.http_requests (url, body, deliver_after)
  SELECT 'http://127.0.0.1:9/flat', '{}', now() - interval '1 day' + n * interval '1 ms' FROM generate_series(1, 40000) n;
INSERT INTO outbox.http_requests (url, body, deliver_after, delivered_at, last_status, attempts)
  SELECT 'http://127.0.0.1:9/flat', '{}', now() - interval '2 days', now() - interval '2 days', 200, 1
    FROM generate_series(1, 40000) n;
-- and 40,000 audit rows of views, each naming one item's holder.
INSERT INTO insurance.audit_log (actor, via, action, targets, result)
  SELECT 'dashboard:ops@example.com', 'backoffice', 'people.viewRiskItem',
         jsonb_build_array('f' || id || '@example.com', jsonb_build_object('riskItemId', id)), 'ok'
    FROM insurance.risk_items WHERE policy_uid LIKE 'flat-%';
-- Its GIN index takes inserts into a pending list that autovacuum merges between bursts; merged
-- here as autovacuum would (a pending list of 40,000 rows is itself scanned whole).
SELECT gin_clean_pending_list('insurance.audit_log_targets_idx') IS NOT NULL AS merged;
ANALYZE insurance.audit_log;
ANALYZE insurance.risk_items;
ANALYZE insurance.beneficiaries;
ANALYZE insurance.authorized_claimants;
ANALYZE insurance.risk_item_documents;
ANALYZE insurance.integration_emissions;
ANALYZE outbox.http_requests;
CREATE TEMP TABLE middle AS SELECT id FROM insurance.risk_items WHERE policy_uid = 'flat-20000';
GRANT SELECT ON middle TO PUBLIC;

-- The outbox claim and the metrics scrape, as the worker and /metrics call them.
SELECT pg_temp.mark();
SELECT set_config('role', 'insurance_service', true);
SELECT is(jsonb_array_length(outbox.claim_batch('flat-worker', 25, 60) -> 'requests'), 25, 'the claim leases 25 due rows');
RESET ROLE;
SELECT is(pg_temp.seq_scans('outbox.http_requests'), 0::bigint, 'claim: no sequential scan of the outbox');
SELECT cmp_ok(pg_temp.reads_since('outbox.http_requests'), '<', 1000::bigint, 'claim: reads its rows, not the backlog');

SELECT pg_temp.mark();
SELECT set_config('role', 'insurance_service', true);
SELECT cmp_ok((insurance.read_metrics() ->> 'outboxPending')::bigint, '>=', 40000::bigint, 'scrape: the backlog is counted');
RESET ROLE;
SELECT is(pg_temp.seq_scans('outbox.http_requests'), 0::bigint, 'scrape: no sequential scan of the outbox');
SELECT cmp_ok(pg_temp.reads_since('outbox.http_requests'), '<', 1000::bigint, 'scrape: does not count the outbox');

-- An emission's claim and recording (the pipeline's two calls), on a key not seen before.
SELECT pg_temp.mark();
SELECT set_config('role', 'insurance_service', true);
SELECT ok((integrations.begin_batch(jsonb_build_array(jsonb_build_object(
             'riskItemId', (SELECT id FROM pg_temp.middle),
             'provider', 'PROVIDER_A', 'event', 'FLAT_TEST')), 'flat', 60) -> 0 ->> 'claimed')::boolean,
          'begin: the key is claimed');
SELECT is(integrations.record_batch(jsonb_build_array(jsonb_build_object(
             'riskItemId', (SELECT id FROM pg_temp.middle),
             'provider', 'PROVIDER_A', 'event', 'FLAT_TEST',
             'outcome', '{"status": "SUCCESS", "externalId": "FLAT-1"}'::jsonb)), '{}') -> 0 ->> 'status',
          'SUCCESS', 'record: the outcome is stored');
RESET ROLE;
SELECT is(pg_temp.seq_scans('insurance.risk_items') + pg_temp.seq_scans('insurance.integration_emissions')
          + pg_temp.seq_scans('outbox.http_requests'), 0::bigint, 'emission: no sequential scan');
SELECT cmp_ok(pg_temp.reads_since('insurance.risk_items') + pg_temp.reads_since('insurance.integration_emissions')
              + pg_temp.reads_since('outbox.http_requests'), '<', 1000::bigint, 'emission: reads its own rows');

-- The gateway's lists, as the channel.
SELECT set_config('role', 'insurance_channel', true),
       set_config('request.jwt.claims', '{"sub": "f1a70000-0000-4000-8000-000000000001", "branch": "v1", "gen": 1}', true);
SELECT pg_temp.mark();
SELECT is((gateway.list_risk_items(0, 0, 9, NULL)).data::jsonb -> 'total', '40000'::jsonb, 'v1 list: the total');
SELECT is(pg_temp.seq_scans('insurance.risk_items'), 0::bigint, 'v1 list: no sequential scan of the risk items');
-- 5,000 for the pages: their plan may read the primary key in order, filtered by channel, and
-- then passes the index entries of rows before the channel's first (the other pgTAP files'
-- rolled-back items, in a fresh suite database about 3,000); counting the channel reads 40,000.
SELECT cmp_ok(pg_temp.reads_since('insurance.risk_items'), '<', 5000::bigint, 'v1 list: does not count the channel');
SELECT is(pg_temp.seq_scans('insurance.risk_item_documents'), 0::bigint, 'v1 list: no sequential scan of the documents');
SELECT cmp_ok(pg_temp.reads_since('insurance.risk_item_documents'), '<', 100::bigint, 'v1 list: reads its documents by key, not the table');

SELECT pg_temp.mark();
SELECT is((gateway.list_risk_items(0, 0, 9, 'flat-123')).data::jsonb -> 'total', '1'::jsonb, 'v1 list of one policy: the total');
SELECT cmp_ok(pg_temp.reads_since('insurance.risk_items'), '<', 1000::bigint, 'v1 list of one policy: an index lookup');

SELECT pg_temp.mark();
SELECT is(jsonb_array_length((gateway.page_risk_items(0, 10, (SELECT id FROM pg_temp.middle), NULL)).data::jsonb -> 'items'),
          10, 'v2 page in the middle: ten items');
SELECT is(pg_temp.seq_scans('insurance.risk_items'), 0::bigint, 'v2 page: no sequential scan of the risk items');
SELECT cmp_ok(pg_temp.reads_since('insurance.risk_items'), '<', 5000::bigint, 'v2 page: does not count the channel');
SELECT is(pg_temp.seq_scans('insurance.risk_item_documents'), 0::bigint, 'v2 page: no sequential scan of the documents');
SELECT cmp_ok(pg_temp.reads_since('insurance.risk_item_documents'), '<', 100::bigint, 'v2 page: reads its documents by key, not the table');

-- The total is a count kept in the same transaction: a new item counts, a deleted one no more.
SELECT lives_ok($$SELECT gateway.create_risk_item(0, '{"package_uid": "flat-pkg", "policy_uid": "flat-new",
                  "variant": "travel", "insured_subject": {"name": "New"}}')$$, 'the channel creates an item');
SELECT is((gateway.page_risk_items(0, 1, NULL, NULL)).data::jsonb -> 'total', '40001'::jsonb, 'the new item is counted at once');
RESET ROLE;
DELETE FROM insurance.risk_items WHERE policy_uid IN ('flat-new', 'flat-1', 'flat-2');
SELECT set_config('role', 'insurance_channel', true);
SELECT is((gateway.list_risk_items(0, 0, 0, NULL)).data::jsonb -> 'total', '39998'::jsonb, 'deleted items are no longer counted');
RESET ROLE;

-- The back-office lists and the holder's list.
SELECT set_config('role', 'insurance_dashboard', true),
       set_config('request.jwt.claims', '{"sub": "1", "email": "ops@example.com", "role": "dashboard"}', true);
SELECT pg_temp.mark();
SELECT is(jsonb_array_length(dashboard.list_emissions('{ABANDONED}', NULL, NULL, NULL, NULL, NULL, 50) -> 'items'), 50,
          'emissions list, a rare status: a full page');
SELECT cmp_ok(pg_temp.reads_since('insurance.integration_emissions'), '<', 1000::bigint,
              'emissions list, a rare status: reads the page, not the table');
SELECT pg_temp.mark();
SELECT is(jsonb_array_length(dashboard.list_emissions('{FAILED,ABANDONED}', NULL, NULL, NULL, NULL, NULL, 50) -> 'items'), 50,
          'emissions list, two statuses: a full page');
SELECT cmp_ok(pg_temp.reads_since('insurance.integration_emissions'), '<', 1000::bigint,
              'emissions list, two statuses: reads the page, not the table');
RESET ROLE;

SELECT set_config('role', 'insurance_holder', true),
       set_config('request.jwt.claims', '{"email": "flat-holder@example.com"}', true);
SELECT pg_temp.mark();
SELECT is(json_array_length(postsales.my_risk_items()), 2, 'the holder''s list');
SELECT cmp_ok(pg_temp.reads_since('insurance.risk_items'), '<', 100::bigint, 'the holder''s list: their items only');
RESET ROLE;

-- A person's export and the audit rows about them, as an operator asks (issue 39): by index.
SELECT pg_temp.mark();
SELECT is(jsonb_array_length(admin.person_export('pgtap', 'flat-holder@example.com') -> 'riskItems'), 2,
          'an export finds the person''s items');
SELECT is(pg_temp.seq_scans('insurance.risk_items'), 0::bigint, 'export: no sequential scan of the risk items');
SELECT is(pg_temp.seq_scans('insurance.audit_log'), 0::bigint, 'export: no sequential scan of the audit log');
SELECT pg_temp.mark();
SELECT is(jsonb_array_length(admin.audit_about('f' || (SELECT id FROM middle) || '@example.com', 100)), 1,
          'audit --about finds the one view of a person');
SELECT cmp_ok(pg_temp.reads_since('insurance.audit_log'), '<', 100::bigint, 'audit --about: reads their rows, not the log');

SELECT * FROM finish();
ROLLBACK;
