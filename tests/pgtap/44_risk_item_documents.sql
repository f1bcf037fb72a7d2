-- The read model of the risk items (risk_item_documents): after every kind of write, through
-- the entry points that make it, each stored document equals the one computed from the tables
-- (insurance.computed_risk_item_documents, the one computation); the readers answer what they
-- answered when they built the documents themselves; each surface reads only its documents.
BEGIN;
\ir helpers/common.psql
\ir helpers/holder.psql
SELECT plan(46);

-- stale(): the items whose stored document (or channel) differs from the computed one, or
-- that have none, and the documents of no item; 0 when the read model is exact. Operator.
CREATE FUNCTION pg_temp.stale() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM insurance.computed_risk_item_documents c
    FULL JOIN insurance.risk_item_documents d ON d.risk_item_id = c.risk_item_id
   WHERE c.risk_item_id IS NULL OR d.risk_item_id IS NULL
      OR (c.channel_id, c.document) IS DISTINCT FROM (d.channel_id, d.document) $$;
-- doc(policy): the stored document of an item, read as the operator.
CREATE FUNCTION pg_temp.doc(_policy text) RETURNS jsonb LANGUAGE sql SECURITY DEFINER AS $$
  SELECT d.document FROM insurance.risk_item_documents d
    JOIN insurance.risk_items r ON r.id = d.risk_item_id WHERE r.policy_uid = _policy $$;
-- The post-sales answer as risk_item_json built it from the tables before the read model.
CREATE FUNCTION pg_temp.postsales_built(_id bigint) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object(
           'id', ri.id, 'uid', ri.uid, 'policy_uid', ri.policy_uid, 'status', ri.status,
           'variant', ri.variant, 'insured_subject', ri.insured_subject,
           'package', jsonb_build_object('uid', p.uid, 'name', p.name),
           'beneficiaries', coalesce((SELECT jsonb_agg(insurance.beneficiary_json(b) ORDER BY b.id)
                                        FROM insurance.beneficiaries b WHERE b.risk_item_id = ri.id), '[]'),
           'created_at', ri.created_at, 'updated_at', ri.updated_at)
    FROM insurance.risk_items ri JOIN insurance.packages p ON p.id = ri.package_id
   WHERE ri.id = _id $$;

INSERT INTO insurance.channels (id, name, branches, api_key_hash) VALUES
  ('d0c00000-0000-4000-8000-00000000000a', 'Doc A', '{v1,v2}', public.digest('key-doc-a', 'sha256')),
  ('d0c00000-0000-4000-8000-00000000000b', 'Doc B', '{v1,v2}', public.digest('key-doc-b', 'sha256'));
INSERT INTO insurance.packages (uid, name, sales_integration_slug) VALUES ('doc-pkg', 'Documents', 'PROVIDER_A');
INSERT INTO insurance.package_variants (package_id, code, name)
  SELECT id, v, initcap(v) FROM insurance.packages, unnest(ARRAY['travel', 'home']) AS v WHERE uid = 'doc-pkg';
INSERT INTO insurance.channel_packages (channel_id, package_id)
  SELECT c, p.id FROM insurance.packages p,
         unnest(ARRAY['d0c00000-0000-4000-8000-00000000000a', 'd0c00000-0000-4000-8000-00000000000b']::uuid[]) c
   WHERE p.uid = 'doc-pkg';

-- ---------------------------------------------------------------- gateway create
SELECT pg_temp.act_as('insurance_channel', '{"sub": "d0c00000-0000-4000-8000-00000000000a", "branch": "v1", "gen": 1}');
CREATE TEMP TABLE created ON COMMIT DROP AS
SELECT (gateway.create_risk_item(0, '{"package_uid": "doc-pkg", "policy_uid": "DOC-1", "variant": "travel",
          "insured_subject": {"name": "Ann"}, "metadata": {"ref": "r1"},
          "beneficiaries": [{"name": "Ann", "email": "ann.doc@example.com", "isHolder": true, "share": 60},
                            {"name": "Kid", "share": 40}]}')).data::jsonb AS answer;
SELECT gateway.create_risk_item(0, '{"package_uid": "doc-pkg", "policy_uid": "DOC-2", "variant": "home",
         "insured_subject": {"name": "Bea"},
         "beneficiaries": [{"name": "Bea", "email": "bea.doc@example.com", "isHolder": true, "share": 100}]}');
SELECT pg_temp.act_as('insurance_channel', '{"sub": "d0c00000-0000-4000-8000-00000000000b", "branch": "v1", "gen": 1}');
SELECT gateway.create_risk_item(0, '{"package_uid": "doc-pkg", "policy_uid": "DOC-3", "variant": "travel",
         "insured_subject": {"name": "Cy"}}');
SELECT pg_temp.as_operator();
SELECT is(pg_temp.stale(), 0::bigint, 'gateway create: every stored document equals the computed one');
SELECT is(jsonb_array_length(pg_temp.doc('DOC-1') -> 'beneficiaries'), 2,
          'gateway create: the document holds the beneficiaries inserted after the item');
SELECT is((SELECT answer FROM created), pg_temp.doc('DOC-1'), 'gateway create answers the stored document');
SELECT is((SELECT answer FROM created),
          (SELECT document FROM insurance.computed_risk_item_documents WHERE risk_item_id = pg_temp.item('DOC-1')),
          'and that document is the one computed from the tables');

-- ---------------------------------------------------------------- holder PATCH and beneficiaries
SELECT pg_temp.as_holder('ann.doc@example.com');
SELECT is(postsales.update_risk_item(pg_temp.item('DOC-1'), NULL, '{"insured_subject": {"phone": "+34 611"}}'),
          pg_temp.postsales_built(pg_temp.item('DOC-1')),
          'holder PATCH answers what post-sales built from the tables');
SELECT pg_temp.as_operator();
SELECT is(pg_temp.doc('DOC-1') -> 'insured_subject', '{"name": "Ann", "phone": "+34 611"}'::jsonb,
          'holder PATCH: the stored document has the new contact data');
SELECT is(pg_temp.stale(), 0::bigint, 'holder PATCH: stored = computed');

SELECT pg_temp.as_holder('ann.doc@example.com');
CREATE TEMP TABLE added ON COMMIT DROP AS
SELECT (postsales.add_beneficiary(pg_temp.item('DOC-1'), NULL, '{"name": "Zed", "share": 0}') ->> 'id')::bigint AS id;
SELECT pg_temp.as_operator();
SELECT is(jsonb_array_length(pg_temp.doc('DOC-1') -> 'beneficiaries'), 3, 'beneficiary add: the document lists it');
SELECT is(pg_temp.stale(), 0::bigint, 'beneficiary add: stored = computed');

SELECT pg_temp.as_holder('ann.doc@example.com');
SELECT postsales.update_beneficiary(pg_temp.item('DOC-1'), NULL, (SELECT id FROM added), '{"name": "Zoe", "relationship": "niece"}');
SELECT pg_temp.as_operator();
SELECT is(pg_temp.doc('DOC-1') -> 'beneficiaries' -> 2 ->> 'name', 'Zoe', 'beneficiary update: the document has the new name');
SELECT is(pg_temp.stale(), 0::bigint, 'beneficiary update: stored = computed');

SELECT pg_temp.as_holder('ann.doc@example.com');
SELECT is(postsales.risk_item(pg_temp.item('DOC-1'), NULL), pg_temp.postsales_built(pg_temp.item('DOC-1')),
          'post-sales read: the answer built from the tables, key for key');
SELECT postsales.remove_beneficiary(pg_temp.item('DOC-1'), NULL, (SELECT id FROM added));
SELECT pg_temp.as_operator();
SELECT is(jsonb_array_length(pg_temp.doc('DOC-1') -> 'beneficiaries'), 2, 'beneficiary remove: gone from the document');
SELECT is(pg_temp.stale(), 0::bigint, 'beneficiary remove: stored = computed');

-- A beneficiary moved to another item (the operator; no entry point does it): both documents.
UPDATE insurance.beneficiaries SET risk_item_id = pg_temp.item('DOC-3')
 WHERE risk_item_id = pg_temp.item('DOC-1') AND name = 'Kid';
SELECT is(ARRAY[jsonb_array_length(pg_temp.doc('DOC-1') -> 'beneficiaries'),
                jsonb_array_length(pg_temp.doc('DOC-3') -> 'beneficiaries')], ARRAY[1, 1],
          'a beneficiary moved: it leaves one document and joins the other');
SELECT is(pg_temp.stale(), 0::bigint, 'beneficiary moved: stored = computed');

-- Several items in one statement (set-based triggers).
INSERT INTO insurance.beneficiaries (risk_item_id, name, share)
  SELECT id, 'Many', 0 FROM insurance.risk_items WHERE policy_uid IN ('DOC-1', 'DOC-2', 'DOC-3');
SELECT is(pg_temp.stale(), 0::bigint, 'one insert of beneficiaries of three items: stored = computed');
DELETE FROM insurance.beneficiaries WHERE name = 'Many';
SELECT is(pg_temp.stale(), 0::bigint, 'one delete of beneficiaries of three items: stored = computed');

-- ---------------------------------------------------------------- package rename
UPDATE insurance.packages SET uid = 'doc-pkg-renamed' WHERE uid = 'doc-pkg';
SELECT is(ARRAY(SELECT pg_temp.doc(p) ->> 'package_uid' FROM unnest(ARRAY['DOC-1', 'DOC-2', 'DOC-3']) p),
          ARRAY['doc-pkg-renamed', 'doc-pkg-renamed', 'doc-pkg-renamed'],
          'package uid rename: every document of its items has the new uid');
SELECT is(pg_temp.stale(), 0::bigint, 'package uid rename: stored = computed');
UPDATE insurance.packages SET name = 'Documents, renamed' WHERE uid = 'doc-pkg-renamed';
SELECT pg_temp.as_holder('ann.doc@example.com');
SELECT is(postsales.risk_item(pg_temp.item('DOC-1'), NULL) -> 'package',
          '{"uid": "doc-pkg-renamed", "name": "Documents, renamed"}'::jsonb,
          'package name rename: post-sales shows the new name (read from packages, not stored)');
SELECT pg_temp.as_operator();
SELECT is(pg_temp.stale(), 0::bigint, 'package name rename: stored = computed');

-- ---------------------------------------------------------------- emission outcome
SELECT pg_temp.act_as('insurance_service');
SELECT integrations.record_emission(pg_temp.item('DOC-2'), 'PROVIDER_A', 'SALES_DISPATCH',
         '{"status": "SUCCESS", "provider": "PROVIDER_A", "externalId": "EXT-DOC-2"}', '{}');
SELECT integrations.record_batch(jsonb_build_array(jsonb_build_object(
         'riskItemId', pg_temp.item('DOC-1'), 'provider', 'PROVIDER_A', 'event', 'SALES_DISPATCH',
         'outcome', '{"status": "FAILED", "provider": "PROVIDER_A", "code": "DOWN", "message": "down",
                      "retryable": true, "httpStatus": 503}'::jsonb)), '{"maxAttempts": 3}');
SELECT pg_temp.as_operator();
SELECT is(pg_temp.doc('DOC-2') -> 'metadata' -> 'integration' ->> 'externalId', 'EXT-DOC-2',
          'record_emission: the stored document has metadata.integration');
SELECT is(pg_temp.doc('DOC-1') -> 'metadata' -> 'integration' ->> 'state', 'FAILED',
          'record_batch: the stored document has metadata.integration');
SELECT is(pg_temp.doc('DOC-1') -> 'metadata' ->> 'ref', 'r1', 'and keeps the partner''s metadata');
SELECT is(pg_temp.stale(), 0::bigint, 'emission outcomes: stored = computed');

-- ---------------------------------------------------------------- channel RLS
SELECT pg_temp.act_as('insurance_channel', '{"sub": "d0c00000-0000-4000-8000-00000000000a", "branch": "v1", "gen": 1}');
SELECT is(ARRAY(SELECT document ->> 'policy_uid' FROM insurance.risk_item_documents ORDER BY risk_item_id),
          ARRAY['DOC-1', 'DOC-2'], 'a channel reads only its own documents');
SELECT is((gateway.list_risk_items(0, 0, 9, NULL)).data::jsonb -> 'items',
          jsonb_build_array(pg_temp.doc('DOC-1'), pg_temp.doc('DOC-2')), 'v1 list: the stored documents in order');
SELECT is((gateway.page_risk_items(0, 1, NULL, NULL)).data::jsonb -> 'items',
          jsonb_build_array(pg_temp.doc('DOC-1')), 'v2 page: the stored documents');
SELECT is((gateway.get_risk_item(0, NULL, (pg_temp.doc('DOC-2') ->> 'uid')::uuid)).data::jsonb, pg_temp.doc('DOC-2'),
          'get by uid: the stored document');
SELECT throws_ok(format('SELECT gateway.get_risk_item(0, %s, NULL)', pg_temp.item('DOC-3')),
                 'PT404', 'risk item not found', 'another channel''s item stays hidden');
SELECT throws_ok($$INSERT INTO insurance.risk_item_documents (risk_item_id, document) VALUES (1, '{}')$$,
                 '42501', NULL, 'a channel cannot write documents');

-- ---------------------------------------------------------------- an item moved to another channel
SELECT pg_temp.as_operator();
UPDATE insurance.risk_items SET channel_id = 'd0c00000-0000-4000-8000-00000000000b' WHERE policy_uid = 'DOC-2';
SELECT is(pg_temp.stale(), 0::bigint, 'an item moved to another channel: stored = computed (channel_id too)');
SELECT pg_temp.act_as('insurance_channel', '{"sub": "d0c00000-0000-4000-8000-00000000000b", "branch": "v1", "gen": 1}');
SELECT is(ARRAY(SELECT document ->> 'policy_uid' FROM insurance.risk_item_documents ORDER BY risk_item_id),
          ARRAY['DOC-2', 'DOC-3'], 'the new channel reads the moved item''s document');
SELECT pg_temp.act_as('insurance_channel', '{"sub": "d0c00000-0000-4000-8000-00000000000a", "branch": "v1", "gen": 1}');
SELECT is(ARRAY(SELECT document ->> 'policy_uid' FROM insurance.risk_item_documents ORDER BY risk_item_id),
          ARRAY['DOC-1'], 'the old channel no longer does');

-- ---------------------------------------------------------------- holder, service, dashboard
SELECT pg_temp.as_holder('bea.doc@example.com');
SELECT is(ARRAY(SELECT document ->> 'policy_uid' FROM insurance.risk_item_documents ORDER BY risk_item_id),
          ARRAY['DOC-2'], 'a holder reads only the documents of their items');
SELECT throws_ok($$UPDATE insurance.risk_item_documents SET document = '{}'$$, '42501', NULL,
                 'a holder cannot write documents');
SELECT pg_temp.act_as('insurance_service');
SELECT is((SELECT count(*) FROM insurance.risk_item_documents
            WHERE document ->> 'policy_uid' IN ('DOC-1', 'DOC-2', 'DOC-3')), 3::bigint,
          'the service role reads every document');
SELECT is(integrations.standard_risk_item(pg_temp.item('DOC-1')) -> 'beneficiaries',
          (SELECT coalesce(jsonb_agg(insurance.beneficiary_json(b) ORDER BY b.id), '[]') FROM insurance.beneficiaries b
            WHERE b.risk_item_id = pg_temp.item('DOC-1')),
          'StandardRiskItem: the beneficiaries built from the tables');
SELECT throws_ok($$DELETE FROM insurance.risk_item_documents$$, '42501', NULL, 'the service role cannot write documents');
SELECT pg_temp.act_as('insurance_dashboard', '{"sub": "1", "email": "ops@example.com", "role": "dashboard"}');
SELECT throws_ok($$SELECT count(*) FROM insurance.risk_item_documents$$, '42501', NULL,
                 'the dashboard does not read documents');
SELECT pg_temp.act_as('insurance_anon');
SELECT throws_ok($$SELECT count(*) FROM insurance.risk_item_documents$$, '42501', NULL, 'nor does anon');
SELECT pg_temp.as_operator();

-- ---------------------------------------------------------------- item delete
DELETE FROM insurance.risk_items WHERE policy_uid = 'DOC-1';  -- its beneficiaries cascade too
SELECT is((SELECT count(*) FROM insurance.risk_item_documents WHERE document ->> 'policy_uid' = 'DOC-1'), 0::bigint,
          'item delete: its document is gone, not stored again by its beneficiaries'' cascade');
SELECT is(pg_temp.stale(), 0::bigint, 'item delete: stored = computed');

-- ---------------------------------------------------------------- the triggers' shape
SELECT is((SELECT count(*) FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
            WHERE p.proname LIKE '\_risk\_item\_documents\_of\_%' AND NOT t.tgisinternal
              AND t.tgtype & 1 = 0   -- FOR EACH STATEMENT
              AND p.prosecdef), 6::bigint,
          'six statement triggers keep the documents, SECURITY DEFINER');
SELECT is((SELECT count(*) FROM pg_proc p
            WHERE (p.proname LIKE '\_risk\_item\_documents\_of\_%' OR p.proname = '_refresh_risk_item_documents')
              AND p.pronamespace = 'insurance'::regnamespace AND p.proconfig @> ARRAY['search_path=""']
              AND NOT EXISTS (SELECT FROM unnest(ARRAY['insurance_app', 'insurance_anon', 'insurance_holder',
                                                       'insurance_channel', 'insurance_service', 'insurance_dashboard']) r
                               WHERE has_function_privilege(r, p.oid, 'EXECUTE'))), 4::bigint,
          'the refresh and its trigger functions pin search_path, and no surface role may call them');

SELECT * FROM finish();
ROLLBACK;
