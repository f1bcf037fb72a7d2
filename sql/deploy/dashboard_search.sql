-- Deploy insurance:dashboard_search to pg
-- What an operator on call types into the back-office's search box: a policy number, a risk
-- item id or uid, an emission id, the insurer's external id, a holder's or beneficiary's
-- e-mail. Each kind is one index lookup (the indexes below), never a scan of the risk items.
-- And the packages page: every package with its "Sales Integration" and "Post-sales
-- Integration" slugs (the specification's dashboard labels).
-- Reworked after v0.9.0 (issue 30): a policy number's beginning finds it too (the first 51 in
-- policy order, through risk_items_policy_uid_prefix_idx: dashboard._policy_prefix_ids), and the
-- answer says what was searched. Restated whole (CREATE OR REPLACE).
-- Reworked after v1.0.0 (issue 42): each item found carries its emissions with their states
-- (dashboard.emission_state), so that the list shows which match is in trouble.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- _policy_prefix_ids(prefix): the risk items whose policy number, in lower case, begins with
-- _prefix (and is not _prefix itself), the first 51 in policy-number order: a range of the
-- pattern index (byte order, whatever the collation); U+10FFFF is the greatest character, so
-- the range holds every one. A plpgsql body keeps a generic plan, which would collect and sort
-- every policy number of a short beginning (a bitmap scan) or read a small table whole: planned
-- without either, it reads the first 51 in index order and stops.
CREATE OR REPLACE FUNCTION dashboard._policy_prefix_ids(_prefix text) RETURNS bigint[]
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' SET enable_seqscan = off SET enable_bitmapscan = off
SET enable_sort = off AS $$
BEGIN
  RETURN ARRAY(SELECT r.id FROM insurance.risk_items r
                WHERE pg_catalog.lower(r.policy_uid) OPERATOR(pg_catalog.~>=~) _prefix
                  AND pg_catalog.lower(r.policy_uid) OPERATOR(pg_catalog.~<~) (_prefix || U&'\+10FFFF')
                  AND pg_catalog.lower(r.policy_uid) <> _prefix
                ORDER BY pg_catalog.lower(r.policy_uid) USING OPERATOR(pg_catalog.~<~) LIMIT 51);
END
$$;
COMMENT ON FUNCTION dashboard._policy_prefix_ids(text) IS
  'The ids of the first 51 risk items (policy-number order) whose lower-case policy number begins with _prefix and '
  'is not _prefix, through risk_items_policy_uid_prefix_idx. Helper of dashboard.search (its owner).';
REVOKE ALL ON FUNCTION dashboard._policy_prefix_ids(text) FROM PUBLIC;

-- search(q): planned with nested loops and no sequential scan (as integrations.begin_batch): a
-- beginning brings up to 51 items, and on a small or freshly filled table the generic plan then
-- joined them by a hash over a scan of every risk item (about 290 ms a search on 5,000 items);
-- driven by the hits, every lookup is an index probe.
CREATE OR REPLACE FUNCTION dashboard.search(_q text) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' SET enable_seqscan = off SET enable_hashjoin = off
SET enable_mergejoin = off AS $$
DECLARE
  _text text := pg_catalog.btrim(_q);
  _lower text := pg_catalog.lower(pg_catalog.btrim(_q));
  _number bigint;
  _uid uuid;
  _found jsonb;
  _searched text[] := ARRAY['policy number', 'policy number prefix'];
  _prefixed bigint[];
BEGIN
  PERFORM insurance.require_role('insurance_dashboard');
  IF _text IS NULL OR _text = '' OR pg_catalog.length(_text) > 200 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'a search has 1 to 200 characters', DETAIL = 'BAD_REQUEST';
  END IF;
  IF _text ~ '^[0-9]{1,18}$' THEN
    _number := _text::bigint;
    _searched := _searched || ARRAY['risk item id', 'emission id'];
  END IF;
  IF _lower ~ '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$' THEN
    _uid := _lower::uuid;
    _searched := _searched || ARRAY['risk item uid'];
  END IF;
  _searched := _searched || ARRAY['external id', 'holder or beneficiary e-mail'];
  _prefixed := dashboard._policy_prefix_ids(_lower);
  WITH hits (risk_item_id, matched) AS (
         SELECT r.id, 'policy number' FROM insurance.risk_items r WHERE pg_catalog.lower(r.policy_uid) = _lower
         UNION ALL
         SELECT r.id, 'policy number prefix' FROM insurance.risk_items r WHERE r.id = ANY (_prefixed)
         UNION ALL
         SELECT r.id, 'risk item id' FROM insurance.risk_items r WHERE r.id = _number
         UNION ALL
         SELECT r.id, 'risk item uid' FROM insurance.risk_items r WHERE r.uid = _uid
         UNION ALL
         SELECT e.risk_item_id, 'emission id' FROM insurance.integration_emissions e WHERE e.id = _number
         UNION ALL
         SELECT e.risk_item_id, 'external id' FROM insurance.integration_emissions e
          WHERE e.external_id = _text AND e.external_id IS NOT NULL
         UNION ALL
         SELECT b.risk_item_id, CASE WHEN b.is_holder THEN 'holder e-mail' ELSE 'beneficiary e-mail' END
           FROM insurance.beneficiaries b WHERE b.email = _lower AND b.email IS NOT NULL),
       items AS (
         SELECT h.risk_item_id, pg_catalog.array_agg(DISTINCT h.matched) AS matched
           FROM hits h GROUP BY h.risk_item_id ORDER BY h.risk_item_id DESC LIMIT 51)
  SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'riskItemId', r.id, 'riskItemUid', r.uid, 'policyUid', r.policy_uid, 'status', r.status,
           'variant', r.variant, 'createdAt', r.created_at, 'matched', pg_catalog.to_jsonb(i.matched),
           'package', pg_catalog.jsonb_build_object('uid', p.uid, 'name', p.name),
           'channel', CASE WHEN c.id IS NULL THEN NULL ELSE pg_catalog.jsonb_build_object('id', c.id, 'name', c.name) END,
           -- Its emissions, oldest first, each in the one state the emissions page shows
           -- (through integration_emissions' unique key on the item; a few per item).
           'emissions', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                                           'id', e.id, 'provider', e.provider, 'event', e.event,
                                           'state', dashboard.emission_state(e.id) ->> 'state') ORDER BY e.id)
                                    FROM insurance.integration_emissions e WHERE e.risk_item_id = r.id), '[]'))
           ORDER BY r.id DESC)
    INTO _found
    FROM items i
    JOIN insurance.risk_items r ON r.id = i.risk_item_id
    JOIN insurance.packages p ON p.id = r.package_id
    LEFT JOIN insurance.channels c ON c.id = r.channel_id;
  _found := coalesce(_found, '[]');
  RETURN pg_catalog.jsonb_build_object(
    'query', _text,
    'searched', pg_catalog.to_jsonb(_searched),
    'items', CASE WHEN pg_catalog.jsonb_array_length(_found) > 50 THEN _found - 50 ELSE _found END,
    'truncated', pg_catalog.jsonb_array_length(_found) > 50);
END
$$;
COMMENT ON FUNCTION dashboard.search(text) IS
  'The risk items an operator''s search _q names (policy number in any case, or its beginning, risk item id or uid, emission id, '
  'insurer external id, holder or beneficiary e-mail), newest first, at most 50: {query, searched[] (the kinds looked up), items[{riskItemId, '
  'riskItemUid, policyUid, status, variant, createdAt, matched[], package{uid,name}, channel{id,name}, emissions[{id, '
  'provider, event, state}]}], truncated}; '
  'each kind is an index lookup. Raises PT400 for an empty or over-long query. Dashboard role.';
REVOKE ALL ON FUNCTION dashboard.search(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dashboard.search(text) TO insurance_dashboard, insurance_app;

COMMIT;
