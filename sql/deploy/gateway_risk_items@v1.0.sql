-- Deploy insurance:gateway_risk_items to pg
-- requires: channel_rls
-- requires: rate_limits
-- The risk-item routes of gateway v1 and v2, one function per route. They run as
-- insurance_channel (SECURITY INVOKER): which rows a channel sees or creates is decided by
-- the policies of channel_rls, never by a WHERE clause here. Each starts with
-- gateway.admit() (active channel, rate limit) and returns a gateway.reply.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- risk_item_documents: each risk item as the gateway shows it, with its package uid and
-- beneficiaries. A view (inlined into each query, so the policies' claim lookups run once
-- per query, not once per item); security_invoker, so the caller's RLS applies.
CREATE VIEW gateway.risk_item_documents WITH (security_invoker = true) AS
SELECT r.id, r.uid, r.policy_uid,
       pg_catalog.jsonb_build_object(
         'uid', r.uid,
         'package_uid', p.uid,
         'policy_uid', r.policy_uid,
         'status', r.status,
         'variant', r.variant,
         'insured_subject', r.insured_subject,
         'beneficiaries', coalesce(b.list, '[]'),
         'metadata', r.metadata,
         'created_at', r.created_at,
         'updated_at', r.updated_at) AS document
  FROM insurance.risk_items r
  JOIN insurance.packages p ON p.id = r.package_id
  LEFT JOIN LATERAL (
    SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
             'name', b.name, 'email', b.email, 'document', b.document,
             'relationship', b.relationship, 'isHolder', b.is_holder, 'share', b.share)
           ORDER BY b.id) AS list
      FROM insurance.beneficiaries b WHERE b.risk_item_id = r.id) AS b ON true;
COMMENT ON VIEW gateway.risk_item_documents IS 'Risk items as the gateway answers them; RLS of the caller applies';

-- list_risk_items(limit, from, to, policy): items from..to (0-based, inclusive, in creation
-- order) of the channel, optionally of one policy uid, with the total count. The app
-- checks the window (0 <= from <= to, at most 100 items). One scan gives both the window
-- and the total (count(*) OVER () runs before OFFSET/LIMIT); only a window past the end
-- needs a second count. The documents are looked up by key for the window's rows only
-- (a scalar subquery per row, never a join over all of the channel's items).
CREATE FUNCTION gateway.list_risk_items(_limit integer, _from integer, _to integer, _policy text)
RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _reply gateway.reply := gateway.admit(_limit);
  _items jsonb;
  _total bigint;
BEGIN
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  SELECT coalesce(pg_catalog.jsonb_agg(
           (SELECT d.document FROM gateway.risk_item_documents d WHERE d.id = page.id) ORDER BY page.id), '[]'),
         max(page.total)
    INTO _items, _total
    FROM (SELECT r.id, count(*) OVER () AS total FROM insurance.risk_items r
           WHERE _policy IS NULL OR r.policy_uid = _policy
           ORDER BY r.id OFFSET _from LIMIT _to - _from + 1) AS page;
  IF _total IS NULL THEN
    SELECT count(*) INTO _total FROM insurance.risk_items r WHERE _policy IS NULL OR r.policy_uid = _policy;
  END IF;
  _reply.data := pg_catalog.jsonb_build_object('items', _items, 'total', _total, 'from', _from, 'to', _to);
  RETURN _reply;
END
$$;

-- page_risk_items(limit, page_size, after, policy): keyset pagination (gateway v2): up to
-- page_size items with an id after `after` (NULL: from the start), the total count and
-- `nextCursor` (the last id as 8 bytes in unpadded base64url, NULL on the last page),
-- which the app decodes back into `after`.
CREATE FUNCTION gateway.page_risk_items(_limit integer, _page_size integer, _after bigint, _policy text)
RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _reply gateway.reply := gateway.admit(_limit);
BEGIN
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  SELECT pg_catalog.jsonb_build_object(
           'items', coalesce(pg_catalog.jsonb_agg(
                               (SELECT d.document FROM gateway.risk_item_documents d WHERE d.id = page.id)
                               ORDER BY page.id) FILTER (WHERE page.n <= _page_size), '[]'),
           'total', (SELECT count(*) FROM insurance.risk_items r
                      WHERE _policy IS NULL OR r.policy_uid = _policy),
           'nextCursor', CASE WHEN count(*) > _page_size THEN pg_catalog.translate(pg_catalog.encode(
                           pg_catalog.int8send(max(page.id) FILTER (WHERE page.n <= _page_size)), 'base64'),
                           '+/=', '-_') END)
    INTO _reply.data
    FROM (SELECT r.id, row_number() OVER (ORDER BY r.id) AS n FROM insurance.risk_items r
           WHERE (_after IS NULL OR r.id > _after) AND (_policy IS NULL OR r.policy_uid = _policy)
           ORDER BY r.id LIMIT _page_size + 1) AS page;
  RETURN _reply;
END
$$;

-- get_risk_item(limit, uid): one item of the channel, or PT404 RISK_ITEM_NOT_FOUND (also
-- for another channel's item: RLS hides it).
CREATE FUNCTION gateway.get_risk_item(_limit integer, _uid uuid) RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _reply gateway.reply := gateway.admit(_limit);
BEGIN
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  SELECT d.document INTO _reply.data FROM gateway.risk_item_documents d WHERE d.uid = _uid;
  IF _reply.data IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'RISK_ITEM_NOT_FOUND';
  END IF;
  RETURN _reply;
END
$$;

-- create_risk_item(limit, item): creates the item for the token's channel, with its
-- beneficiaries, from a body the app has checked for shape. PT422 UNKNOWN_PACKAGE,
-- PT422 INVALID_VARIANT (not sold by the package), PT409 DUPLICATE_POLICY (same policy
-- uid in the same package, whichever channel holds it).
CREATE FUNCTION gateway.create_risk_item(_limit integer, _item jsonb) RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _reply   gateway.reply := gateway.admit(_limit);
  _package insurance.packages;
  _row     insurance.risk_items;
BEGIN
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  SELECT * INTO _package FROM insurance.packages WHERE uid = _item ->> 'package_uid';
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT422', MESSAGE = 'unknown package', DETAIL = 'UNKNOWN_PACKAGE';
  END IF;
  IF NOT EXISTS (SELECT FROM insurance.package_variants v
                  WHERE v.package_id = _package.id AND v.code = _item ->> 'variant') THEN
    RAISE EXCEPTION USING ERRCODE = 'PT422', MESSAGE = 'the package does not sell this variant',
      DETAIL = 'INVALID_VARIANT',
      HINT = (SELECT pg_catalog.jsonb_build_object('variants', coalesce(pg_catalog.jsonb_agg(v.code ORDER BY v.code), '[]'))
                FROM insurance.package_variants v WHERE v.package_id = _package.id)::text;
  END IF;
  INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, insured_subject, metadata)
  VALUES (_package.id, (SELECT insurance.claim('sub'))::uuid, _item ->> 'policy_uid', _item ->> 'variant',
          coalesce(_item -> 'insured_subject', '{}'), coalesce(_item -> 'metadata', '{}'))
  ON CONFLICT (package_id, policy_uid) DO NOTHING
  RETURNING * INTO _row;
  IF _row.id IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT409', MESSAGE = 'this policy exists already in the package',
      DETAIL = 'DUPLICATE_POLICY';
  END IF;
  INSERT INTO insurance.beneficiaries (risk_item_id, name, email, document, relationship, is_holder, share)
  SELECT _row.id, b ->> 'name', pg_catalog.lower(b ->> 'email'), b ->> 'document', b ->> 'relationship',
         coalesce((b ->> 'isHolder')::boolean, false), coalesce((b ->> 'share')::numeric, 0)
    FROM pg_catalog.jsonb_array_elements(coalesce(_item -> 'beneficiaries', '[]')) AS b;
  SELECT d.document INTO _reply.data FROM gateway.risk_item_documents d WHERE d.id = _row.id;
  RETURN _reply;
END
$$;

GRANT SELECT ON gateway.risk_item_documents TO insurance_channel;
REVOKE ALL ON FUNCTION gateway.list_risk_items(integer, integer, integer, text),
  gateway.page_risk_items(integer, integer, bigint, text),
  gateway.get_risk_item(integer, uuid), gateway.create_risk_item(integer, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.list_risk_items(integer, integer, integer, text),
  gateway.page_risk_items(integer, integer, bigint, text),
  gateway.get_risk_item(integer, uuid), gateway.create_risk_item(integer, jsonb)
  TO insurance_channel, insurance_app;

COMMIT;
